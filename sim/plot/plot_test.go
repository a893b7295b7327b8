package plot

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/sim"
)

func shortRun(t *testing.T) *sim.Result {
	t.Helper()
	r, err := sim.Run(sim.Scenario{Duration: 6 * time.Minute, OutageStart: time.Minute, OutageEnd: 4 * time.Minute}, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// near reports whether c is within tol of want on every channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) int { return abs(int(x>>8) - int(y)) }
	return d(r, want.R) <= tol && d(g, want.G) <= tol && d(b, want.B) <= tol
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
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
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
				if near(img.At(x, y), want, 40) {
					n++
				}
			}
		}
		return n
	}
	rows, cols := len(r.Strategies), len(Columns)
	for i, sr := range r.Strategies {
		for j, col := range []color.RGBA{colState, colCalls, colMean} {
			cell := image.Rect(j*w/cols, i*h/rows, (j+1)*w/cols, (i+1)*h/rows)
			n := count(cell, col)
			drawn := 0
			for y := cell.Min.Y; y < cell.Max.Y; y += 2 {
				for x := cell.Min.X; x < cell.Max.X; x += 2 {
					if !near(img.At(x, y), color.RGBA{255, 255, 255, 255}, 10) {
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
	for _, want := range []string{"open", "half-open", "closed", "14:00"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no axis label %q", want)
		}
	}
}

func TestWriteRejectsUnknownFormat(t *testing.T) {
	if err := Write(io.Discard, shortRun(t), "gif"); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("error %v, want one naming the format", err)
	}
}
