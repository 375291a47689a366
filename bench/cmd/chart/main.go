// Command chart draws a peer comparison's results file as an SVG: for each
// workload, how many times each other system's time (or file size) is
// godets', on a log axis, so a bar above 1 is a workload godets leads.
//
//	go run ./cmd/chart results/peers.json ../docs/bench-peers.svg
//	go run ./cmd/chart -n 10000 results/peers.json out.svg
package main

import (
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/godets/godets/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // the png format
	_ "gonum.org/v1/plot/vg/vgsvg" // the svg format
)

// others are the systems compared with godets, in bar order, with their
// colours (colour-blind safe: Okabe and Ito's palette).
var others = []struct {
	name string
	clr  color.Color
}{
	{"OTP", color.RGBA{0xe6, 0x9f, 0x00, 0xff}},
	{"bbolt", color.RGBA{0x56, 0xb4, 0xe9, 0xff}},
	{"pogreb", color.RGBA{0x00, 0x9e, 0x73, 0xff}},
	{"pebble", color.RGBA{0xcc, 0x79, 0xa7, 0xff}},
}

func main() {
	n := flag.Int("n", 0, "table size to draw (default: the largest in the file)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: chart [-n N] RESULTS.json OUT.svg")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *n); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(in, out string, n int) error {
	r, err := bench.ReadResults(in)
	if err != nil {
		return err
	}
	format := strings.TrimPrefix(filepath.Ext(out), ".")
	if format != "svg" && format != "png" {
		return fmt.Errorf("%s: the output must be an .svg (or .png) file", out)
	}
	p, legend, err := Chart(r, n)
	if err != nil {
		return err
	}
	const w, h, legendW = 11 * vg.Inch, 5 * vg.Inch, 0.9 * vg.Inch
	cw, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	// The legend gets a strip of its own on the right, where no bar can
	// run under it.
	dc := draw.New(cw)
	p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	legend.Draw(draw.Crop(dc, w-legendW, 0, 0, -vg.Inch))
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// group is one workload's bars: the ratio against each other system,
// NaN where that system has no figure.
type group struct {
	label  string
	ratios []float64
}

// groups computes the ratios at size n. A workload measured at one size
// only (the sessions, on their 1,000-object table) is taken at that size.
func groups(r *bench.Results, n int) []group {
	var gs []group
	for _, w := range bench.Workloads {
		at := n
		if _, ok := r.Find(w.Name, n, "godets"); !ok {
			at = onlySize(r, w.Name)
		}
		g, ok := r.Find(w.Name, at, "godets")
		if !ok || g.Median <= 0 {
			continue
		}
		label := w.Name
		if at != n {
			label += fmt.Sprintf("\n(%s)", short(at))
		}
		grp := group{label: label}
		seen := false
		for _, o := range others {
			f, ok := r.Find(w.Name, at, o.name)
			if ok && f.Median > 0 {
				grp.ratios = append(grp.ratios, f.Median/g.Median)
				seen = true
			} else {
				grp.ratios = append(grp.ratios, math.NaN())
			}
		}
		if seen {
			gs = append(gs, grp)
		}
	}
	return gs
}

// onlySize returns the size a workload was measured at when that is a
// single one, else 0.
func onlySize(r *bench.Results, workload string) int {
	size := 0
	for _, f := range r.Figures {
		if f.Workload == workload && f.System == "godets" {
			if size != 0 && size != f.N {
				return 0
			}
			size = f.N
		}
	}
	return size
}

func short(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("N=%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("N=%dk", n/1e3)
	}
	return fmt.Sprintf("N=%d", n)
}

// Chart builds the plot of r at size n (0: the largest size) and its
// legend, which the caller draws beside it.
func Chart(r *bench.Results, n int) (*plot.Plot, plot.Legend, error) {
	legend := plot.NewLegend()
	sizes := r.Sizes()
	if n == 0 {
		for _, s := range sizes {
			if _, ok := r.Find("insert", s, "godets"); ok {
				n = s
			}
		}
	}
	if !slices.Contains(sizes, n) {
		return nil, legend, fmt.Errorf("no figures at N=%d (the file has %v)", n, sizes)
	}
	gs := groups(r, n)
	if len(gs) == 0 {
		return nil, legend, fmt.Errorf("no workload at N=%d has godets and another system", n)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("godets against the others, %s: their time (or size) / godets' (log scale; above 1 = godets ahead)\n%s, %s, %s, median of %d rounds",
		short(n), r.Date, r.Machine, r.Go, r.Rounds)
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ratioTicks{}
	p.Y.Label.Text = "ratio (log)"
	labels := make([]string, len(gs))
	for i, g := range gs {
		labels[i] = g.label
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	bars := &ratioBars{groups: gs}
	p.Add(bars)
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{0x40}
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(one)
	for _, o := range others {
		legend.Add(o.name, swatch{o.clr})
	}
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(9)
	return p, legend, nil
}

// ratioBars draws each group's bars from 1 to the ratio, so a bar goes up
// where godets leads and down where it trails, and writes the ratio at its
// end.
type ratioBars struct{ groups []group }

const barSpan = 0.8 // share of a group's slot that its bars take

func (b *ratioBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = 1, 1
	for _, g := range b.groups {
		for _, v := range g.ratios {
			if !math.IsNaN(v) {
				ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			}
		}
	}
	// Room for the labels at the bar ends.
	return -0.5, float64(len(b.groups)) - 0.5, ymin / 1.6, ymax * 1.6
}

func (b *ratioBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	w := barSpan / float64(len(others))
	font := plt.X.Tick.Label
	font.Font.Size = vg.Points(6)
	font.XAlign = draw.XCenter
	for gi, g := range b.groups {
		for si, v := range g.ratios {
			if math.IsNaN(v) {
				continue
			}
			x0 := float64(gi) - barSpan/2 + float64(si)*w
			left, right := trX(x0), trX(x0+w*0.9)
			base, top := trY(1), trY(v)
			c.FillPolygon(others[si].clr, []vg.Point{{X: left, Y: base}, {X: right, Y: base}, {X: right, Y: top}, {X: left, Y: top}})
			label := font
			pt := vg.Point{X: (left + right) / 2, Y: top}
			if v >= 1 {
				label.YAlign = draw.YBottom
			} else {
				label.YAlign = draw.YTop
			}
			c.FillText(label, pt, ratioText(v))
		}
	}
}

func ratioText(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// swatch is a legend entry: a filled square of the system's colour.
type swatch struct{ clr color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.clr, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// ratioTicks marks the powers of ten, and 2 and 5 times them when the
// axis spans at most four decades, labelled as plain ratios (0.5, 1, 2,
// 10) rather than as exponents.
type ratioTicks struct{}

func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	steps := []float64{1, 2, 5}
	if math.Log10(max/min) > 4 {
		steps = steps[:1]
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range steps {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strings.TrimSuffix(fmt.Sprintf("%g", v), ".0")})
		}
	}
	return ts
}
