package plot

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

var (
	runOnce   sync.Once
	runResult *sim.Result
	runErr    error
)

// shortRun is one short incident, simulated once for all the tests of the package.
func shortRun(t *testing.T) *sim.Result {
	t.Helper()
	runOnce.Do(func() {
		runResult, runErr = sim.Run(sim.Scenario{Duration: 5 * time.Minute, OutageStart: time.Minute, OutageEnd: 3 * time.Minute,
			TurnRate: 0.5, Users: 15}, sim.Options{})
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	return runResult
}

// rgba returns the image as *image.RGBA, so the pixel loops below read memory directly.
func rgba(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok {
		return m
	}
	m := image.NewRGBA(img.Bounds())
	draw.Draw(m, m.Bounds(), img, img.Bounds().Min, draw.Src)
	return m
}

// near reports whether c is within tol of want on every channel.
func near(c color.RGBA, want color.RGBA, tol int) bool {
	d := func(x, y uint8) int { return abs(int(x) - int(y)) }
	return d(c.R, want.R) <= tol && d(c.G, want.G) <= tol && d(c.B, want.B) <= tol
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestPNGPanels decodes the PNG and checks its size and, panel by panel, that each one
// drew what it should: the breaker's state line (and none for the strategy without a
// breaker), the calls series, and the turn latency line, each in its own colour.
func TestPNGPanels(t *testing.T) {
	r := shortRun(t)
	var buf bytes.Buffer
	if err := Write(&buf, r, PNG); err != nil {
		t.Fatal(err)
	}
	decoded, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	img := rgba(decoded)
	w, h := Size(r)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	if w < 1200 || h < 200*len(r.Strategies) {
		t.Fatalf("PNG %dx%d is too small to read", w, h)
	}
	count := func(cell image.Rectangle, want color.RGBA) int {
		n := 0
		for y := cell.Min.Y; y < cell.Max.Y; y++ {
			for x := cell.Min.X; x < cell.Max.X; x++ {
				if near(img.RGBAAt(x, y), want, 40) {
					n++
				}
			}
		}
		return n
	}
	rows, cols := len(r.Strategies), len(Columns)
	top := int(math.Round(float64(headerHeight) / 72 * dpi)) // the title and the legend
	for i, sr := range r.Strategies {
		for j, col := range []color.RGBA{colState, colCalls, colMean} {
			cell := image.Rect(j*w/cols, top+i*(h-top)/rows, (j+1)*w/cols, top+(i+1)*(h-top)/rows)
			n := count(cell, col)
			drawn := 0
			for y := cell.Min.Y; y < cell.Max.Y; y += 2 {
				for x := cell.Min.X; x < cell.Max.X; x += 2 {
					if !near(img.RGBAAt(x, y), color.RGBA{255, 255, 255, 255}, 10) {
						drawn++
					}
				}
			}
			if drawn < 1000 {
				t.Errorf("%s, %s: only %d drawn pixels", sr.Name, Columns[j], drawn)
			}
			wantLine := j > 0 || sr.Breaker
			switch {
			case wantLine && n < 100:
				t.Errorf("%s, %s: %d pixels of its line colour, want the series drawn", sr.Name, Columns[j], n)
			case !wantLine && n > 0:
				t.Errorf("%s, %s: %d pixels of the state colour, but it has no breaker", sr.Name, Columns[j], n)
			}
		}
	}
}

// TestSVGTitles parses the SVG and finds every panel's title in its text.
func TestSVGTitles(t *testing.T) {
	r := shortRun(t)
	var buf bytes.Buffer
	if err := Write(&buf, r, SVG); err != nil {
		t.Fatal(err)
	}
	var texts []string
	dec := xml.NewDecoder(&buf)
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			inText = v.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(v)))
			}
		}
	}
	titles := Titles(r)
	if len(titles) != len(r.Strategies)*len(Columns) {
		t.Fatalf("%d titles for %d strategies", len(titles), len(r.Strategies))
	}
	for _, want := range titles {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no title %q", want)
		}
	}
	// Each row's caption: agentbreaker's strategies print the policy their breaker ran.
	for _, sr := range r.Strategies {
		want := Caption(sr)
		if sr.Policy != nil && !strings.Contains(want, sr.Policy.Description) {
			t.Errorf("caption %q lacks the policy %q", want, sr.Policy.Description)
		}
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no caption %q", want)
		}
	}
	// Axis labels with units and the time zone, the legend of the band and of each
	// line, and the note standing for the naive row's missing breaker.
	for _, want := range []string{"open", "half-open", "closed", "14:00", "time (UTC)", "calls per 10 s", "seconds",
		"breaker state", "outage: enrichment down", "turn latency, mean per 10 s", "turn latency, max per 10 s",
		"calls sent to enrichment per 10 s", Header(r), noBreakerNote} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no text %q", want)
		}
	}
}

// TestOneScalePerColumn: every row of a column has the same y range, so a row that
// looks low is low next to the others.
func TestOneScalePerColumn(t *testing.T) {
	r := shortRun(t)
	sc := scalesOf(r)
	for _, sr := range r.Strategies {
		row, err := strategyRow(r, sr, sc)
		if err != nil {
			t.Fatal(err)
		}
		if row[1].Y.Max != sc.calls || row[2].Y.Max != sc.latency {
			t.Errorf("%s: calls to %v, latency to %v: want every row to %v and %v", sr.Name, row[1].Y.Max, row[2].Y.Max, sc.calls, sc.latency)
		}
	}
	naive := slices.IndexFunc(r.Strategies, func(sr sim.StrategyResult) bool { return sr.Name == sim.StrategyNaive })
	most := 0
	for _, v := range r.Strategies[naive].Series.Calls {
		most = max(most, v)
	}
	if sc.calls < float64(most) {
		t.Errorf("calls scale %v below naive's peak %d", sc.calls, most)
	}
}

// TestTextIsReadable: no text below 11 pt, at the size the command draws.
func TestTextIsReadable(t *testing.T) {
	r := shortRun(t)
	row, err := strategyRow(r, r.Strategies[1], scalesOf(r))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range row {
		for _, size := range []vg.Length{p.Title.TextStyle.Font.Size, p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size,
			p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size} {
			if size < vg.Points(11) {
				t.Errorf("%q: text of %v pt", p.Title.Text, size.Points())
			}
		}
	}
}

func TestWriteRejectsUnknownFormat(t *testing.T) {
	if err := Write(io.Discard, shortRun(t), "gif"); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("error %v, want one naming the format", err)
	}
}
