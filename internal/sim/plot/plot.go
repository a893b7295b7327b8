package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// Format is an output format.
type Format string

const (
	PNG Format = "png"
	SVG Format = "svg"
)

// Sizes: panels wide enough for 15 minutes of 10 s bins and tall enough for an axis
// label and three state names in 11 pt type; a header above them holds the figure's
// title and the legend.
const (
	panelWidth   = 5.2 * vg.Inch
	panelHeight  = 2.6 * vg.Inch
	headerHeight = 0.75 * vg.Inch
	// captionHeight is the line above each row naming the strategy and its policy.
	captionHeight = 20
	dpi           = 96
)

// Type sizes: nothing below 11 pt, readable at 100% in a postmortem document.
var (
	titleSize = vg.Points(12)
	textSize  = vg.Points(11)
)

// noBreakerNote stands where a strategy without a breaker would have its state line.
const noBreakerNote = "nothing stops a call: each is sent, retries included"

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

// title is a panel's title; the row's caption above it names the strategy.
func title(r *sim.Result, sr sim.StrategyResult, col int) string {
	switch col {
	case 0:
		if !sr.Breaker {
			return "no breaker"
		}
		return fmt.Sprintf("breaker state (%d probes in outage)", sr.Summary.ProbesDuringOutage)
	case 1:
		return fmt.Sprintf("calls to %s (%d in outage)", r.Scenario.Dependency, sr.Summary.CallsDuringOutage)
	default:
		return "turn latency"
	}
}

// Caption is a strategy row's caption: its name and what guarded the calls, for
// agentbreaker's strategies the policy read back from the breaker that ran.
func Caption(sr sim.StrategyResult) string {
	if sr.Policy != nil {
		return sr.Name + ": " + sr.Policy.Description
	}
	return sr.Name + ": " + sr.Description
}

// Header returns the figure's title line, above the legend.
func Header(r *sim.Result) string {
	s := r.Scenario
	zone := r.Start.Format("MST")
	return fmt.Sprintf("%s down from %s to %s %s, %s; one row per strategy, the same scale down each column",
		s.Dependency, r.Start.Add(s.OutageStart).Format("15:04"), r.Start.Add(s.OutageEnd).Format("15:04"), zone, s.OutageMode)
}

// Size returns the size in pixels of a PNG drawn for r.
func Size(r *sim.Result) (w, h int) {
	width, height := figureSize(r)
	return int(math.Round(float64(width) / 72 * dpi)), int(math.Round(float64(height) / 72 * dpi))
}

func figureSize(r *sim.Result) (vg.Length, vg.Length) {
	return panelWidth * vg.Length(len(Columns)), (panelHeight+captionHeight)*vg.Length(len(r.Strategies)) + headerHeight
}

// Write draws r in format f to w.
func Write(w io.Writer, r *sim.Result, f Format) error {
	if len(r.Strategies) == 0 {
		return errors.New("plot: the result has no strategies")
	}
	width, height := figureSize(r)
	c, out, err := newCanvas(width, height, f)
	if err != nil {
		return err
	}
	sc := scalesOf(r)
	plots := make([][]*plot.Plot, len(r.Strategies))
	for i, sr := range r.Strategies {
		row, err := strategyRow(r, sr, sc)
		if err != nil {
			return err
		}
		plots[i] = row
	}
	header := c
	header.Min.Y = c.Max.Y - headerHeight
	body := c
	body.Max.Y = header.Min.Y
	drawHeader(header, r)
	tiles := draw.Tiles{Rows: len(r.Strategies), Cols: len(Columns),
		PadTop: vg.Points(4) + captionHeight, PadBottom: vg.Points(6), PadLeft: vg.Points(8), PadRight: vg.Points(12),
		PadX: vg.Points(22), PadY: vg.Points(16) + captionHeight}
	canvases := plot.Align(plots, tiles, body)
	captionStyle := text.Style{Font: font.From(plot.DefaultFont, titleSize), Handler: plot.DefaultTextHandler}
	captionStyle.Font.Variant = "Sans"
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
		top := canvases[i][0].Max.Y
		c.FillText(captionStyle, vg.Point{X: c.Min.X + vg.Points(10), Y: top + vg.Points(5)}, Caption(r.Strategies[i]))
	}
	_, err = out.WriteTo(w)
	return err
}

// newCanvas returns a white canvas of the size given, and what writes it in format f.
func newCanvas(width, height vg.Length, f Format) (draw.Canvas, io.WriterTo, error) {
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
		return c, nil, fmt.Errorf("plot: format %q: want png or svg", f)
	}
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	return c, out, nil
}

// drawHeader writes the title and a one-line legend: what the band and each line mean.
func drawHeader(c draw.Canvas, r *sim.Result) {
	fnt := plot.DefaultFont
	titleStyle := text.Style{Font: font.From(fnt, titleSize), Handler: plot.DefaultTextHandler}
	textStyle := text.Style{Font: font.From(fnt, textSize), Handler: plot.DefaultTextHandler}
	x := c.Min.X + vg.Points(10)
	c.FillText(titleStyle, vg.Point{X: x, Y: c.Max.Y - vg.Points(18)}, Header(r))
	band := outageBand(0, 1, 1)
	calls, mean, maxLine, state := &plotter.Line{}, &plotter.Line{}, &plotter.Line{}, &plotter.Line{}
	calls.Color, calls.Width, calls.FillColor = colCalls, vg.Points(1.2), colCallsFill
	mean.Color, mean.Width = colMean, vg.Points(1.5)
	maxLine.Color, maxLine.Width, maxLine.Dashes = colMax, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(2)}
	state.Color, state.Width = colState, vg.Points(1.5)
	entries := []struct {
		name  string
		thumb plot.Thumbnailer
	}{
		{"outage: " + r.Scenario.Dependency + " down", band},
		{"breaker state", state},
		{"calls sent to " + r.Scenario.Dependency + " per 10 s", calls},
		{"turn latency, mean per 10 s", mean},
		{"turn latency, max per 10 s", maxLine},
	}
	y := c.Max.Y - vg.Points(44)
	thumbW, thumbH := vg.Points(22), vg.Points(11)
	for _, e := range entries {
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + thumbW, Y: y + thumbH}}}
		e.thumb.Thumbnail(&icon)
		x += thumbW + vg.Points(5)
		c.FillText(textStyle, vg.Point{X: x, Y: y}, e.name)
		x += textStyle.Width(e.name) + vg.Points(22)
	}
}

var (
	outageFill   = color.RGBA{R: 255, G: 205, B: 205, A: 255}
	colState     = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	colCalls     = color.RGBA{R: 30, G: 90, B: 200, A: 255}
	colCallsFill = color.NRGBA{R: 30, G: 90, B: 200, A: 90}
	colMean      = color.RGBA{R: 20, G: 140, B: 60, A: 255}
	colMax       = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// scales are the y ranges shared by every row of a column, so that rows compare.
type scales struct{ calls, latency float64 }

func scalesOf(r *sim.Result) scales {
	sc := scales{calls: 1, latency: 1}
	for _, sr := range r.Strategies {
		for _, v := range sr.Series.Calls {
			sc.calls = math.Max(sc.calls, float64(v))
		}
		for _, v := range sr.Series.TurnLatencyMax {
			sc.latency = math.Max(sc.latency, v)
		}
	}
	sc.calls *= 1.1
	sc.latency *= 1.1
	return sc
}

// outageBand is the shaded outage, from onset to recovery (minutes), ymax high.
func outageBand(onset, recov, ymax float64) *plotter.Polygon {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: onset, Y: 0}, {X: recov, Y: 0}, {X: recov, Y: ymax}, {X: onset, Y: ymax}})
	if err != nil {
		panic(err) // four finite points: cannot fail
	}
	poly.Color, poly.LineStyle.Width = outageFill, 0
	return poly
}

// strategyRow is one strategy's row of panels: breaker state, calls per bin and turn
// latency, the last two on the column's scales sc.
func strategyRow(r *sim.Result, sr sim.StrategyResult, sc scales) ([]*plot.Plot, error) {
	f := frame{r: r, sr: sr, mins: r.Scenario.Duration.Minutes(),
		onset: r.Scenario.OutageStart.Minutes(), recov: r.Scenario.OutageEnd.Minutes(), zone: r.Start.Format("MST")}
	state, err := f.statePanel()
	if err != nil {
		return nil, err
	}
	calls, err := f.callsPanel(sc.calls)
	if err != nil {
		return nil, err
	}
	lat, err := f.latencyPanel(sc.latency)
	if err != nil {
		return nil, err
	}
	return []*plot.Plot{state, calls, lat}, nil
}

// frame is what every panel of a strategy's row shares: the run, the strategy, the
// run's length and the outage in minutes, and the time zone of the time axis.
type frame struct {
	r                  *sim.Result
	sr                 sim.StrategyResult
	mins, onset, recov float64
	zone               string
}

// newPlot returns column col's panel, empty but for the outage band and the grid, its
// y axis from 0 to ymax.
func (f frame) newPlot(col int, ymax float64, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title(f.r, f.sr, col)
	p.Title.TextStyle.Font.Size = titleSize
	p.X.Min, p.X.Max = 0, f.mins
	p.X.Tick.Marker = timeTicks{start: f.r.Start, minutes: f.mins}
	p.X.Label.Text = "time (" + f.zone + ")"
	p.Y.Label.Text = ylabel
	for _, size := range []*vg.Length{&p.X.Tick.Label.Font.Size, &p.Y.Tick.Label.Font.Size, &p.X.Label.TextStyle.Font.Size, &p.Y.Label.TextStyle.Font.Size} {
		*size = textSize
	}
	p.Y.Min, p.Y.Max = 0, ymax
	p.Add(outageBand(f.onset, f.recov, ymax)) // under the data
	p.Add(plotter.NewGrid())
	return p
}

// statePanel draws the breaker state as a step line from the transitions; without a
// breaker, a note where the line would be, so the empty panel is not read as "always
// closed".
func (f frame) statePanel() (*plot.Plot, error) {
	r, sr, mins := f.r, f.sr, f.mins
	state := f.newPlot(0, 2.3, "breaker state")
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
		return state, nil
	}
	state.Y.Tick.Marker = plot.ConstantTicks{}
	state.Y.Label.Text = ""
	note, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: mins / 2, Y: 1.15}},
		Labels: []string{noBreakerNote}})
	if err != nil {
		return nil, err
	}
	for i := range note.TextStyle {
		note.TextStyle[i].Font.Size = titleSize
		note.TextStyle[i].XAlign = text.XCenter
		note.TextStyle[i].YAlign = text.YCenter
	}
	state.Add(note)
	return state, nil
}

// callsPanel draws the calls per bin, as steps, up to ymax, the column's scale.
func (f frame) callsPanel(ymax float64) (*plot.Plot, error) {
	ser, mins := f.sr.Series, f.mins
	calls := f.newPlot(1, ymax, "calls per 10 s")
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
	cl.FillColor = colCallsFill
	calls.Add(cl)
	return calls, nil
}

// latencyPanel draws the turns' mean and maximum latency by the bin the turn ended in,
// up to ymax, the column's scale.
func (f frame) latencyPanel(ymax float64) (*plot.Plot, error) {
	ser := f.sr.Series
	binMin := sim.BinWidth.Minutes()
	var mean, maxs plotter.XYs
	for i := range ser.TurnLatencyMean {
		if ser.TurnLatencyMean[i] < 0 {
			continue
		}
		x := (float64(i) + 0.5) * binMin
		mean = append(mean, plotter.XY{X: x, Y: ser.TurnLatencyMean[i]})
		maxs = append(maxs, plotter.XY{X: x, Y: ser.TurnLatencyMax[i]})
	}
	lat := f.newPlot(2, ymax, "seconds")
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
	return lat, nil
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
