package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/agentbreaker/agentbreaker/sim"
)

// Format is an output format.
type Format string

const (
	PNG Format = "png"
	SVG Format = "svg"
)

// Panel sizes: wide enough for 15 minutes of 10 s bins, tall enough for three labels.
const (
	panelWidth  = 5.2 * vg.Inch
	panelHeight = 2.3 * vg.Inch
	dpi         = 96
)

// Columns are the panel kinds of each strategy's row, left to right.
var Columns = []string{"breaker state", "calls reaching the dependency per 10 s", "turn latency"}

// Titles returns every panel's title, row by row, as they are drawn.
func Titles(r *sim.Result) []string {
	var out []string
	for _, sr := range r.Strategies {
		for c := range Columns {
			out = append(out, title(r, sr, c))
		}
	}
	return out
}

func title(r *sim.Result, sr sim.StrategyResult, col int) string {
	switch col {
	case 0:
		if !sr.Breaker {
			return sr.Name + ": no breaker"
		}
		return fmt.Sprintf("%s: breaker state (%d probes in outage)", sr.Name, sr.Summary.ProbesDuringOutage)
	case 1:
		return fmt.Sprintf("%s: calls to %s per 10 s (%d in outage)", sr.Name, r.Scenario.Dependency, sr.Summary.CallsDuringOutage)
	default:
		return fmt.Sprintf("%s: turn latency, s (mean solid, max dashed)", sr.Name)
	}
}

// Size returns the size in pixels of a PNG drawn for r.
func Size(r *sim.Result) (w, h int) {
	return int(math.Round(float64(panelWidth) * float64(len(Columns)) / 72 * dpi)),
		int(math.Round(float64(panelHeight) * float64(len(r.Strategies)) / 72 * dpi))
}

// Write draws r in format f to w.
func Write(w io.Writer, r *sim.Result, f Format) error {
	if len(r.Strategies) == 0 {
		return errors.New("plot: the result has no strategies")
	}
	width, height := panelWidth*vg.Length(len(Columns)), panelHeight*vg.Length(len(r.Strategies))
	var c draw.Canvas
	var out io.WriterTo
	switch f {
	case PNG:
		img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
		c, out = draw.New(img), vgimg.PngCanvas{Canvas: img}
	case SVG:
		img := vgsvg.New(width, height)
		c, out = draw.New(img), img
	default:
		return fmt.Errorf("plot: format %q: want png or svg", f)
	}
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	plots := make([][]*plot.Plot, len(r.Strategies))
	for i, sr := range r.Strategies {
		row, err := strategyRow(r, sr)
		if err != nil {
			return err
		}
		plots[i] = row
	}
	tiles := draw.Tiles{Rows: len(r.Strategies), Cols: len(Columns),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(8), PadRight: vg.Points(10),
		PadX: vg.Points(18), PadY: vg.Points(14)}
	canvases := plot.Align(plots, tiles, c)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	_, err := out.WriteTo(w)
	return err
}

var (
	outageFill = color.RGBA{R: 255, G: 205, B: 205, A: 255}
	colState   = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	colCalls   = color.RGBA{R: 30, G: 90, B: 200, A: 255}
	colMean    = color.RGBA{R: 20, G: 140, B: 60, A: 255}
	colMax     = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

func strategyRow(r *sim.Result, sr sim.StrategyResult) ([]*plot.Plot, error) {
	mins := r.Scenario.Duration.Minutes()
	onset, recov := r.Scenario.OutageStart.Minutes(), r.Scenario.OutageEnd.Minutes()
	newPlot := func(col int, ymax float64) *plot.Plot {
		p := plot.New()
		p.Title.Text = title(r, sr, col)
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Min, p.X.Max = 0, mins
		p.X.Tick.Marker = timeTicks{start: r.Start, minutes: mins}
		p.X.Tick.Label.Font.Size = vg.Points(8)
		p.Y.Tick.Label.Font.Size = vg.Points(8)
		p.Y.Min, p.Y.Max = 0, ymax
		// The outage, shaded under the data.
		if poly, err := plotter.NewPolygon(plotter.XYs{{X: onset, Y: 0}, {X: recov, Y: 0}, {X: recov, Y: ymax}, {X: onset, Y: ymax}}); err == nil {
			poly.Color, poly.LineStyle.Width = outageFill, 0
			p.Add(poly)
		}
		p.Add(plotter.NewGrid())
		return p
	}

	// Breaker state as a step line from the transitions.
	state := newPlot(0, 2.3)
	state.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "closed"}, {Value: 1, Label: "half-open"}, {Value: 2, Label: "open"}}
	if sr.Breaker {
		pts := plotter.XYs{{X: 0, Y: 0}}
		for _, tr := range sr.Transitions {
			x := tr.At.Sub(r.Start).Minutes()
			pts = append(pts, plotter.XY{X: x, Y: pts[len(pts)-1].Y}, plotter.XY{X: x, Y: stateLevel(tr.To)})
		}
		pts = append(pts, plotter.XY{X: mins, Y: pts[len(pts)-1].Y})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = colState, vg.Points(1.5)
		state.Add(l)
	}

	// Calls per bin, as steps.
	ser := sr.Series
	maxCalls := 1.0
	for _, v := range ser.Calls {
		maxCalls = math.Max(maxCalls, float64(v))
	}
	calls := newPlot(1, maxCalls*1.1)
	binMin := sim.BinWidth.Minutes()
	var cp plotter.XYs
	for i, v := range ser.Calls {
		x := float64(i) * binMin
		cp = append(cp, plotter.XY{X: x, Y: float64(v)}, plotter.XY{X: math.Min(x+binMin, mins), Y: float64(v)})
	}
	cl, err := plotter.NewLine(cp)
	if err != nil {
		return nil, err
	}
	cl.Color, cl.Width = colCalls, vg.Points(1.2)
	cl.FillColor = color.NRGBA{R: 30, G: 90, B: 200, A: 90}
	calls.Add(cl)

	// Turn latency by the bin the turn ended in.
	maxLat := 1.0
	var mean, maxs plotter.XYs
	for i := range ser.TurnLatencyMean {
		if ser.TurnLatencyMean[i] < 0 {
			continue
		}
		x := (float64(i) + 0.5) * binMin
		mean = append(mean, plotter.XY{X: x, Y: ser.TurnLatencyMean[i]})
		maxs = append(maxs, plotter.XY{X: x, Y: ser.TurnLatencyMax[i]})
		maxLat = math.Max(maxLat, ser.TurnLatencyMax[i])
	}
	lat := newPlot(2, maxLat*1.1)
	if len(mean) > 0 {
		ml, err := plotter.NewLine(maxs)
		if err != nil {
			return nil, err
		}
		ml.Color, ml.Width, ml.Dashes = colMax, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(2)}
		al, err := plotter.NewLine(mean)
		if err != nil {
			return nil, err
		}
		al.Color, al.Width = colMean, vg.Points(1.5)
		lat.Add(ml, al)
	}
	return []*plot.Plot{state, calls, lat}, nil
}

func stateLevel(s string) float64 {
	switch s {
	case "open", "forced_open":
		return 2
	case "half_open":
		return 1
	default:
		return 0
	}
}

// timeTicks labels the minutes axis with wall-clock times every two minutes.
type timeTicks struct {
	start   time.Time
	minutes float64
}

func (t timeTicks) Ticks(lo, hi float64) []plot.Tick {
	step := math.Max(1, math.Ceil(t.minutes/8))
	var ticks []plot.Tick
	for m := 0.0; m <= hi+1e-9; m += step {
		if m < lo {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: m, Label: t.start.Add(time.Duration(m * float64(time.Minute))).Format("15:04")})
	}
	return ticks
}
