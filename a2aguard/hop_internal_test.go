package a2aguard

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// A caller's operation scope is trusted only as an opaque short name: anything else
// is no scope (the task is new work, as from a caller without agentbreaker).
func TestCallerScope(t *testing.T) {
	tests := []struct {
		name string
		meta map[string]any
		want string
	}{
		{"none", nil, ""},
		{"digest", map[string]any{MetadataKey: map[string]any{fieldScope: scopeDigest("inv-1")}}, scopeDigest("inv-1")},
		{"not a map", map[string]any{MetadataKey: "x"}, ""},
		{"not a string", map[string]any{MetadataKey: map[string]any{fieldScope: 42}}, ""},
		{"empty", map[string]any{MetadataKey: map[string]any{fieldScope: ""}}, ""},
		{"huge", map[string]any{MetadataKey: map[string]any{fieldScope: strings.Repeat("a", 65)}}, ""},
		{"odd characters", map[string]any{MetadataKey: map[string]any{fieldScope: "a2a:root\n"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, callerScope(tc.meta))
		})
	}
	require.Len(t, scopeDigest(strings.Repeat("x", 1<<16)), 32)
	require.Empty(t, scopeDigest(""))
}

func TestInnerMark(t *testing.T) {
	mark := func(in any) *a2a.TaskStatusUpdateEvent {
		return &a2a.TaskStatusUpdateEvent{Metadata: map[string]any{MetadataKey: map[string]any{fieldInner: in}}}
	}
	tests := []struct {
		name   string
		ev     a2a.Event
		want   classify.Class
		retry  bool
		wantOK bool
	}{
		{"nil event", nil, "", false, false},
		{"nil task", (*a2a.Task)(nil), "", false, false},
		{"no metadata", &a2a.Task{}, "", false, false},
		{"well formed", mark(map[string]any{fieldOutcome: "failed", fieldClass: "http_5xx", fieldRetry: true, fieldDep: "crm"}), classify.ClassHTTP5xx, true, true},
		{"on a task", &a2a.Task{Metadata: map[string]any{MetadataKey: map[string]any{fieldInner: map[string]any{fieldOutcome: "failed"}}}}, classify.ClassUnclassified, false, true},
		{"unknown outcome", mark(map[string]any{fieldOutcome: "succeeded"}), "", false, false},
		{"outcome not a string", mark(map[string]any{fieldOutcome: true}), "", false, false},
		{"inner not a map", mark("failed"), "", false, false},
		{"unknown class", mark(map[string]any{fieldOutcome: "failed", fieldClass: "made_up"}), classify.ClassUnclassified, false, true},
		{"huge class", mark(map[string]any{fieldOutcome: "failed", fieldClass: strings.Repeat("x", 1<<16)}), classify.ClassUnclassified, false, true},
		{"retryable not a bool", mark(map[string]any{fieldOutcome: "failed", fieldRetry: "yes"}), classify.ClassUnclassified, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := innerMark(tc.ev)
			require.Equal(t, tc.wantOK, ok)
			if ok {
				require.Equal(t, tc.want, f.Class)
				require.Equal(t, tc.retry, f.Retryable)
			}
		})
	}
	f, _ := innerMark(mark(map[string]any{fieldOutcome: "failed", fieldDep: strings.Repeat("d", 1<<16)}))
	require.LessOrEqual(t, len(f.Dependency), 256)
}

// wireRequest splits a marked request: the copy sent carries the mark, the request
// adk-go keeps (and copies into the user's event) has the metadata it had before the
// guard marked it. Anything else is sent as it is.
func TestWireRequest(t *testing.T) {
	mark := map[string]any{fieldScope: scopeDigest("inv-1")}
	tests := []struct {
		name     string
		meta     map[string]any
		wantKept map[string]any
		wantSent map[string]any
		copied   bool
	}{
		{"no metadata", nil, nil, nil, false},
		{"marked", map[string]any{MetadataKey: mark}, nil, map[string]any{MetadataKey: mark}, true},
		{"marked beside the caller's", map[string]any{"trace": "t1", MetadataKey: mark},
			map[string]any{"trace": "t1"}, map[string]any{"trace": "t1", MetadataKey: mark}, true},
		{"ours but no scope", map[string]any{MetadataKey: map[string]any{"other": 1}},
			map[string]any{MetadataKey: map[string]any{"other": 1}}, map[string]any{MetadataKey: map[string]any{"other": 1}}, false},
		{"a scope that is not a string", map[string]any{MetadataKey: map[string]any{fieldScope: 7}},
			map[string]any{MetadataKey: map[string]any{fieldScope: 7}}, map[string]any{MetadataKey: map[string]any{fieldScope: 7}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser), Metadata: tc.meta}
			sent := wireRequest(req)
			require.Equal(t, tc.copied, sent != req)
			require.Equal(t, tc.wantKept, req.Metadata)
			require.Equal(t, tc.wantSent, sent.Metadata)
			require.Same(t, req.Message, sent.Message)
		})
	}
	require.Nil(t, wireRequest(nil))
}
