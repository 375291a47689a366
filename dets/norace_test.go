//go:build !race

package dets

const raceEnabled = false
