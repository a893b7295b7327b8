package admin_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
)

func TestJournalListApproveDiscard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	status, _, body := f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.Equal(t, http.StatusOK, status)
	var list struct{ Pending []admin.Intent }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Pending, 2)
	require.Equal(t, "int-1", list.Pending[0].ID)
	require.Equal(t, "set tier of customer 42 to gold", list.Pending[0].Summary)

	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/int-1/approve", body: `{"reason":"CRM shows the change did not apply"}`})
	require.Equal(t, http.StatusOK, status, body)
	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/int-2/discard"})
	require.Equal(t, http.StatusOK, status, body)
	approved, discarded := f.journal.resolved()
	require.Equal(t, []string{"int-1"}, approved)
	require.Equal(t, []string{"int-2"}, discarded)

	_, _, body = f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.JSONEq(t, `{"pending": []}`, body)

	var actions []string
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: operator action" {
			actions = append(actions, r["action"].(string)+" "+r["intent"].(string))
		}
	}
	require.Equal(t, []string{"approve int-1", "discard int-2"}, actions)
}

func TestJournalErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/journal/int-404/approve"})
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, `intent \"int-404\"`)

	status, _, _ = f.do(t, request{method: http.MethodPost, path: "/api/journal/int-1/redo"})
	require.Equal(t, http.StatusNotFound, status)

	f.journal.fail(errors.New("journal: database is read-only"))
	status, _, body = f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.Equal(t, http.StatusBadGateway, status)
	// A database's error can quote what it stores: the body is fixed text and a
	// fingerprint, never the error's words.
	require.NotContains(t, body, "read-only")
	require.Contains(t, body, "listing journal intents failed; see the server's log (len=")
	status, _, _ = f.do(t, request{method: http.MethodPost, path: "/api/journal/int-1/discard"})
	require.Equal(t, http.StatusBadGateway, status)
	_, discarded := f.journal.resolved()
	require.Empty(t, discarded)
}

// notFoundErr is how a journal that does not import admin reports an unknown ID.
type notFoundErr struct{}

func (notFoundErr) Error() string  { return "no such intent" }
func (notFoundErr) NotFound() bool { return true }

func TestJournalNotFoundByBehaviour(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.journal.fail(notFoundErr{})
	status, _, _ := f.do(t, request{method: http.MethodPost, path: "/api/journal/int-1/approve"})
	require.Equal(t, http.StatusNotFound, status)
}
