// Package doccheck holds no code, only tests of the repository's own
// documentation: that every citation of a document and a section, in code
// comments and in the docs, names a file and a section that exist.
package doccheck
