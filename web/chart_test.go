package web

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

func TestAxisTop_StepsReadWell(t *testing.T) {
	for _, tc := range []struct {
		max    float64
		counts bool
		want   float64
	}{
		{0, true, 4}, {1, true, 4}, {4, true, 4}, {5, true, 8}, {7, true, 8}, {9, true, 20}, {41, true, 80},
		{0, false, 1}, {0.3, false, 0.4}, {250, false, 400}, {33.59, false, 40},
	} {
		if got := axisTop(tc.max, tc.counts); got != tc.want {
			t.Errorf("axisTop(%v, counts %v) = %v, want %v", tc.max, tc.counts, got, tc.want)
		}
	}
}

var barPattern = regexp.MustCompile(`<rect class="bar s(\d)" x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)" data-label="([^"]+)" data-series="([^"]+)" data-value="([^"]+)"><title>([^<]+)</title></rect>`)

func TestChart_BarsStackToScaleWithHoverTitles(t *testing.T) {
	c := chart{ID: "refusals", Title: "429s <by scope>", Unit: "refusals", Labels: []string{"12:00", "12:01", "12:02"}, Counts: true, Format: whole,
		Series: []chartSeries{{Name: "prepare", Values: []float64{0, 2, 1}}, {Name: "read", Values: []float64{0, 6, 0}}}}
	var b strings.Builder
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.Contains(svg, `<title id="refusals-title">429s &lt;by scope&gt;</title>`) || !strings.Contains(svg, `data-max="8.0"`) {
		t.Fatalf("title or axis missing: %s", svg)
	}
	// The axis runs to 8 over 156 units: 2 is 39 high, 6 is 117 stacked on it, 1 is 19.5;
	// empty segments of a stack are not drawn.
	want := [][]string{
		{"0", "151.0", "39.0", "12:01", "prepare", "2", "12:01 · prepare: 2 refusals"},
		{"1", "34.0", "117.0", "12:01", "read", "6", "12:01 · read: 6 refusals"},
		{"0", "170.5", "19.5", "12:02", "prepare", "1", "12:02 · prepare: 1 refusals"},
	}
	got := barPattern.FindAllStringSubmatch(svg, -1)
	if len(got) != len(want) {
		t.Fatalf("%d bars, want %d: %s", len(got), len(want), svg)
	}
	for i := range want {
		if strings.Join(got[i][1:], "|") != strings.Join(want[i], "|") {
			t.Errorf("bar %d: %q, want %q", i, got[i][1:], want[i])
		}
	}
	for _, tick := range []string{">0</text>", ">2</text>", ">4</text>", ">6</text>", ">8</text>", ">12:00</text>", ">prepare</text>", ">read</text>"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("no %s in the axes or legend", tick)
		}
	}
}

func TestShortParty_KeepsTheHintAndBothEndsOfTheFingerprint(t *testing.T) {
	for in, want := range map[string]string{
		"alice::1220abcdef0123456789abcdef0123456789abcdef0123456789abcdef01239f3c": "alice::1220ab…9f3c",
		"a-very-long-hint-indeed::1220abcdef0123456789abcdef0123456789ab9f3c":       "a-very-long-hin…::1220ab…9f3c",
		"bob::1220ab": "bob::1220ab",
		"127.0.0.1":   "127.0.0.1",
	} {
		if got := shortParty(in); got != want {
			t.Errorf("shortParty(%q) = %q, want %q", in, got, want)
		}
	}
}
