package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// WriteTradeoff draws tune's trade-off, one panel per dependency it recommends for:
// each candidate a grey point at (healthy calls refused, calls sent to the dead
// dependency) over every outage's segment, the base policy in blue and the
// recommended one in red, each labelled.
func WriteTradeoff(w io.Writer, res *sim.TuneResult, f Format) error {
	var plots []*plot.Plot
	for i := range res.Dependencies {
		if dt := &res.Dependencies[i]; dt.Best >= 0 {
			p, err := tradeoffPanel(dt)
			if err != nil {
				return err
			}
			plots = append(plots, p)
		}
	}
	if len(plots) == 0 {
		return errors.New("plot: no dependency has a recommendation")
	}
	c, out, err := newCanvas(panelWidth*vg.Length(len(plots)), 1.6*panelHeight, f)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadTop: vg.Points(8), PadBottom: vg.Points(6),
		PadLeft: vg.Points(8), PadRight: vg.Points(12), PadX: vg.Points(22)}
	for i, cv := range plot.Align([][]*plot.Plot{plots}, tiles, c)[0] {
		plots[i].Draw(cv)
	}
	_, err = out.WriteTo(w)
	return err
}

func tradeoffPanel(dt *sim.DependencyTune) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %d candidates over %d outages", dt.Dependency, len(dt.Candidates), len(dt.Outages))
	p.Title.TextStyle.Font.Size = titleSize
	p.X.Label.Text = "healthy calls refused"
	p.Y.Label.Text = "calls sent to the dead dependency"
	for _, size := range []*vg.Length{&p.X.Tick.Label.Font.Size, &p.Y.Tick.Label.Font.Size, &p.X.Label.TextStyle.Font.Size, &p.Y.Label.TextStyle.Font.Size} {
		*size = textSize
	}
	p.Add(plotter.NewGrid())
	xy := func(c *sim.Candidate) plotter.XY {
		return plotter.XY{X: float64(c.Total.HealthyRefused), Y: float64(c.Total.DeadSent)}
	}
	var all plotter.XYs
	for _, c := range dt.Candidates {
		all = append(all, xy(c))
	}
	best := dt.Candidates[dt.Best]
	for _, s := range []struct {
		pts    plotter.XYs
		col    color.Color
		radius vg.Length
		label  string
	}{
		{all, colMax, 2.5, ""},
		{plotter.XYs{xy(dt.Base)}, colCalls, 5, "plugin default: " + dt.Base.Label()},
		{plotter.XYs{xy(best)}, colState, 5, "recommended: " + best.Label()},
	} {
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = s.col, s.radius, draw.CircleGlyph{}
		p.Add(sc)
		if s.label != "" {
			p.Legend.Add(s.label, sc)
		}
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = textSize
	return p, nil
}
