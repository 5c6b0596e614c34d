package learn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/oplab-dev/oplab/quiz"
)

// reviewRequest is the body of POST /flashcards/review.
type reviewRequest struct {
	// State is the card's stored state; omitted or zero for a new card.
	State quiz.State `json:"state"`
	// Rating is 1 (again) to 4 (easy).
	Rating quiz.Rating `json:"rating"`
	// Now is the browser's clock, so due times compare against the same
	// clock that will later read them; omitted means the server's.
	Now *time.Time `json:"now,omitempty"`
}

// reviewResponse carries the card's next state, or what was wrong.
type reviewResponse struct {
	State *quiz.State `json:"state,omitempty"`
	Error string      `json:"error,omitempty"`
}

// review runs the SM-2 scheduler for one card. It is stateless: the state
// lives in the browser, which sends it and stores what comes back.
func (s *site) review(w http.ResponseWriter, r *http.Request) {
	req, err := decodeReview(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, reviewResponse{Error: err.Error()})
		return
	}
	now := s.now()
	if req.Now != nil {
		now = *req.Now
	}
	next, err := quiz.Schedule(req.State, req.Rating, now)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, reviewResponse{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, reviewResponse{State: &next})
}

func decodeReview(body io.Reader) (reviewRequest, error) {
	var req reviewRequest
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return reviewRequest{}, fmt.Errorf("review body is not valid JSON of the form {\"state\":{…},\"rating\":1-4,\"now\":\"RFC 3339\"}: %w", err)
	}
	if dec.More() {
		return reviewRequest{}, errors.New("review body has data after the JSON object")
	}
	return req, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
