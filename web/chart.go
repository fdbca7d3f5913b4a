package web

import (
	"context"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// chart is a bar or line chart the console draws on the server as inline SVG: axes, a title,
// labels, and a <title> on every bar and point that the browser shows on hover. It needs no
// script and no style attribute (the console's CSP allows neither inline); colours come from
// classes in admin.css.
type chart struct {
	ID     string
	Title  string
	Unit   string   // what a value counts, for the hover text: "sales", "refusals"
	Labels []string // one per point: the bucket's start, e.g. "14:05"
	Ticks  int      // label every Ticks-th point on the x axis,
	First  int      // starting with this one
	Series []chartSeries
	Line   bool // lines with a dot per point; otherwise bars, stacked when there are several series
	Counts bool // whole numbers: the y axis steps by at least 1
	Wide   bool // twice as wide, for a page-wide figure
	Format func(float64) string
}

type chartSeries struct {
	Name   string
	Values []float64
}

// The drawing's geometry, in SVG user units; the SVG scales to its box.
const (
	chartH                    = 220
	padLeft, padRight         = 52, 12
	padTop, padBottom         = 34, 30
	plotH             float64 = chartH - padTop - padBottom
	axisSteps                 = 4
)

// axisTop is the top of a y axis of axisSteps steps that holds m: each step is 1, 2 or 5
// times a power of ten, at least 1 for counts, so the ticks read well. An empty chart gets
// the smallest such axis.
func axisTop(m float64, counts bool) float64 {
	step := m / axisSteps
	if counts {
		step = max(step, 1)
	}
	if step <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(step)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= step*(1-1e-9) {
			return f * p * axisSteps
		}
	}
	return 10 * p * axisSteps
}

// maxValue is the largest value the chart draws: a stack's total for stacked bars.
func (c chart) maxValue() float64 {
	var m float64
	for i := range c.Labels {
		var stack float64
		for _, s := range c.Series {
			if c.Line {
				m = max(m, s.Values[i])
			} else {
				stack += s.Values[i]
			}
		}
		m = max(m, stack)
	}
	return m
}

func (c chart) format(v float64) string {
	if c.Format != nil {
		return c.Format(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Render writes the chart's SVG; it makes chart a templ component.
func (c chart) Render(_ context.Context, w io.Writer) error {
	var b strings.Builder
	esc := html.EscapeString
	n := len(c.Labels)
	chartW := 560
	if c.Wide {
		chartW = 1120
	}
	plotW := float64(chartW - padLeft - padRight)
	top := axisTop(c.maxValue(), c.Counts)
	y := func(v float64) float64 { return padTop + plotH - v/top*plotH }
	slot := plotW / float64(max(n, 1))
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title" data-max="%s">`, esc(c.ID), chartW, chartH, esc(c.ID), f(top))
	fmt.Fprintf(&b, `<title id="%s-title">%s</title>`, esc(c.ID), esc(c.Title))
	fmt.Fprintf(&b, `<text class="chart-title" x="%d" y="18">%s</text>`, padLeft, esc(c.Title))
	// Legend, right-aligned in the title row, when there is more than one series.
	if len(c.Series) > 1 {
		x := float64(chartW - padRight)
		for i := len(c.Series) - 1; i >= 0; i-- {
			name := c.Series[i].Name
			x -= float64(len(name))*6.5 + 18
			fmt.Fprintf(&b, `<rect class="s%d" x="%s" y="9" width="10" height="10"/><text class="legend" x="%s" y="18">%s</text>`, i, f(x), f(x+14), esc(name))
		}
	}
	// Y axis: its steps, with grid lines.
	for i := 0; i <= axisSteps; i++ {
		v := top * float64(i) / axisSteps
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, padLeft, chartW-padRight, f(y(v)), f(y(v)))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, padLeft-6, f(y(v)+4), esc(c.format(v)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%s" y2="%s"/>`, padLeft, chartW-padRight, f(padTop+plotH), f(padTop+plotH))
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%s"/>`, padLeft, padLeft, padTop, f(padTop+plotH))
	// X axis labels.
	every := max(c.Ticks, 1)
	for i, l := range c.Labels {
		if (i-c.First)%every == 0 && i >= c.First {
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, f(padLeft+slot*(float64(i)+0.5)), chartH-10, esc(l))
		}
	}
	if c.Line {
		for si, s := range c.Series {
			pts := make([]string, n)
			for i, v := range s.Values {
				pts[i] = f(padLeft+slot*(float64(i)+0.5)) + "," + f(y(v))
			}
			fmt.Fprintf(&b, `<polyline class="line s%d" points="%s"/>`, si, strings.Join(pts, " "))
			for i, v := range s.Values {
				fmt.Fprintf(&b, `<circle class="dot s%d" cx="%s" cy="%s" r="3" data-label="%s" data-series="%s" data-value="%s"><title>%s</title></circle>`,
					si, f(padLeft+slot*(float64(i)+0.5)), f(y(v)), esc(c.Labels[i]), esc(s.Name), esc(c.format(v)), esc(c.hover(i, s.Name, v)))
			}
		}
	} else {
		gap := min(slot*0.2, 4)
		for i := range c.Labels {
			base := 0.0
			for si, s := range c.Series {
				v := s.Values[i]
				if v == 0 && len(c.Series) > 1 {
					continue // an empty segment of a stack has nothing to hover
				}
				h := v / top * plotH
				fmt.Fprintf(&b, `<rect class="bar s%d" x="%s" y="%s" width="%s" height="%s" data-label="%s" data-series="%s" data-value="%s"><title>%s</title></rect>`,
					si, f(padLeft+slot*float64(i)+gap/2), f(y(base+v)), f(slot-gap), f(h), esc(c.Labels[i]), esc(s.Name), esc(c.format(v)), esc(c.hover(i, s.Name, v)))
				base += v
			}
		}
	}
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// hover is the text a bar or a point shows: "14:05 · read: 3 refusals".
func (c chart) hover(i int, series string, v float64) string {
	s := c.Labels[i] + " · "
	if len(c.Series) > 1 {
		s += series + ": "
	}
	return strings.TrimSpace(s + c.format(v) + " " + c.Unit)
}

var _ templ.Component = chart{}
