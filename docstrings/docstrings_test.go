package docstrings_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/docstrings"
)

func TestAppend(t *testing.T) {
	t.Parallel()
	const s = docstrings.Sentence
	tests := []struct {
		name, desc, sentence, want string
	}{
		{"plain", "Looks up a customer.", s, "Looks up a customer.\n\n" + s},
		{"trailing space", "Looks up.  \n", s, "Looks up.\n\n" + s},
		{"empty description", "", s, s},
		{"already there", "Looks up.\n\n" + s, s, "Looks up.\n\n" + s},
		{"already in the middle", "A. " + s + " B.", s, "A. " + s + " B."},
		{"blank sentence", "Looks up.", "  ", "Looks up."},
		{"sentence with spaces", "Looks up.", "  Careful.  ", "Looks up.\n\nCareful."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := docstrings.Append(tt.desc, tt.sentence)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, docstrings.Append(got, tt.sentence), "idempotent")
		})
	}
}

func TestDeclarationsCopies(t *testing.T) {
	t.Parallel()
	a := &genai.FunctionDeclaration{Name: "a", Description: "A."}
	b := &genai.FunctionDeclaration{Name: "transfer_to_agent", Description: "B."}
	out := docstrings.Declarations([]*genai.FunctionDeclaration{a, nil, b}, "S.", func(n string) bool { return n != "transfer_to_agent" })
	require.Equal(t, "A.", a.Description, "the original is untouched")
	require.Equal(t, "A.\n\nS.", out[0].Description)
	require.Nil(t, out[1])
	require.Same(t, b, out[2], "excluded declarations are passed through")
}

func TestRequestLeavesSharedValuesAlone(t *testing.T) {
	t.Parallel()
	decl := &genai.FunctionDeclaration{Name: "a", Description: "A."}
	shared := &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{decl}}
	search := &genai.Tool{GoogleSearch: &genai.GoogleSearch{}}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{search, shared}, Temperature: genai.Ptr[float32](0.5)}
	req := &model.LLMRequest{Config: cfg}
	docstrings.Request(req, docstrings.Sentence, nil)
	require.NotSame(t, cfg, req.Config)
	require.Equal(t, float32(0.5), *req.Config.Temperature)
	require.Same(t, search, req.Config.Tools[0])
	require.Equal(t, "A.", shared.FunctionDeclarations[0].Description)
	require.Equal(t, docstrings.Append("A.", docstrings.Sentence), req.Config.Tools[1].FunctionDeclarations[0].Description)
	docstrings.Request(&model.LLMRequest{}, docstrings.Sentence, nil) // no config: nothing to do
	docstrings.Request(nil, docstrings.Sentence, nil)
}

func TestNewRejectsABlankSentence(t *testing.T) {
	t.Parallel()
	_, err := docstrings.New(docstrings.Config{Sentence: " \n"})
	require.ErrorIs(t, err, docstrings.ErrEmptySentence)
	require.Panics(t, func() { docstrings.MustNew(docstrings.Config{Sentence: " "}) })
}

// cachedTool returns the same declaration pointer every time, as some tools do.
type cachedTool struct{ decl *genai.FunctionDeclaration }

func (c *cachedTool) Name() string                            { return c.decl.Name }
func (c *cachedTool) Description() string                     { return c.decl.Description }
func (c *cachedTool) IsLongRunning() bool                     { return false }
func (c *cachedTool) Declaration() *genai.FunctionDeclaration { return c.decl }
func (c *cachedTool) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	return toolutils.PackTool(req, c)
}
func (c *cachedTool) Run(agent.Context, any) (map[string]any, error) {
	return map[string]any{"status": "ok"}, nil
}

func TestTheModelSeesTheSentenceExactlyOnceAfterManySteps(t *testing.T) {
	t.Parallel()
	cached := &cachedTool{decl: &genai.FunctionDeclaration{Name: "lookup", Description: "Looks up an order."}}
	weather, err := functiontool.New(functiontool.Config{Name: "weather", Description: "Gets the weather."},
		func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{"sky": "blue"}, nil })
	require.NoError(t, err)

	const steps = 12
	var script []breakertest.Step
	for i := range steps {
		name := "lookup"
		if i%2 == 1 {
			name = "weather"
		}
		script = append(script, breakertest.Call(name, map[string]any{}))
	}
	script = append(script, breakertest.Text("done"))
	m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: script})
	a, err := llmagent.New(llmagent.Config{
		Name: "root", Model: m, Tools: []tool.Tool{cached, weather},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{docstrings.MustNew(docstrings.Config{})},
	})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a})
	ctx := context.Background()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := h.Run(ctx, sid, "go")
	require.NoError(t, err)
	require.Equal(t, "done", turn.FinalText())
	require.Equal(t, steps+1, m.Calls())

	reqs := m.Requests()
	require.Len(t, reqs, steps+1)
	for _, r := range reqs {
		require.Len(t, r.Declarations, 2)
		for _, d := range r.Declarations {
			require.Equal(t, 1, strings.Count(d.Description, docstrings.Sentence), "request %d, tool %s: %q", r.Index, d.Name, d.Description)
		}
	}
	require.Equal(t, "Looks up an order.", cached.decl.Description, "the tool's cached declaration is untouched")
}
