package learn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/progress"
)

// Body limits of the JSON endpoints: a review is one small state; the
// deck's states are at most maxStates of them.
const (
	reviewLimit = 4 << 10
	statesLimit = 256 << 10
	maxStates   = 1000
)

// reviewRequest is the body of POST /flashcards/review.
type reviewRequest struct {
	// State is the card's stored state; omitted or {} for a new card.
	State json.RawMessage `json:"state"`
	// Rating is 1 (again) to 4 (easy).
	Rating quiz.Rating `json:"rating"`
	// Now is the browser's clock, so due times compare against the same
	// clock that will later read them; omitted means the server's.
	Now *time.Time `json:"now,omitempty"`
	// Card is the card's ID, so the review counts on the learner's
	// session; omitted: the review is scheduled, not counted.
	Card string `json:"card,omitempty"`
}

// reviewResponse carries the card's next state, or what was wrong.
type reviewResponse struct {
	State *quiz.State `json:"state,omitempty"`
	// Recall was the predicted chance of recall at the review, before it;
	// absent for a new card.
	Recall *float64 `json:"recall,omitempty"`
	// RecallAtDue is the predicted chance of recall when the card next
	// falls due; absent after Again.
	RecallAtDue *float64 `json:"recallAtDue,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// review runs the FSRS scheduler for one card. It is stateless: the state
// lives in the browser, which sends it and stores what comes back.
func (s *site) review(w http.ResponseWriter, r *http.Request) {
	var req reviewRequest
	if status, err := decodeJSON(w, r, reviewLimit, &req, `{"state":{…},"rating":1-4,"now":"RFC 3339","card":"id"}`); err != nil {
		httpx.JSON(w, status, reviewResponse{Error: "review body " + err.Error()})
		return
	}
	state, err := quiz.DecodeState(req.State)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, reviewResponse{Error: fmt.Sprintf("card state: %v", err)})
		return
	}
	if req.Card != "" && !slices.ContainsFunc(s.bank.Cards, func(c quiz.Card) bool { return c.ID == req.Card }) {
		httpx.JSON(w, http.StatusBadRequest, reviewResponse{Error: fmt.Sprintf("card: no flashcard has the ID %q", httpx.Excerpt(req.Card, 64))})
		return
	}
	now := s.clock(req.Now)
	next, err := quiz.Schedule(state, req.Rating, now)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, reviewResponse{Error: err.Error()})
		return
	}
	if req.Card != "" && s.record != nil {
		s.record.RecordFor(r, func(rec *progress.Record) bool { rec.Reviewed(req.Card); return true })
	}
	resp := reviewResponse{State: &next}
	if req.Rating != quiz.Again {
		// After Again the card comes back in a minute to be relearned, not
		// when the forgetting curve reaches the desired retention, so its
		// recall then says nothing about the schedule.
		resp.RecallAtDue = recallAt(next, next.Due)
	}
	resp.Recall = recallAt(state, now)
	httpx.JSON(w, http.StatusOK, resp)
}

// statesRequest is the body of POST /flashcards/states: every card state
// the browser holds, by card ID.
type statesRequest struct {
	States map[string]json.RawMessage `json:"states"`
	Now    *time.Time                 `json:"now,omitempty"`
}

// cardStatus is one card's state as the scheduler reads it.
type cardStatus struct {
	State quiz.State `json:"state"`
	// Recall is the predicted chance of recall now; absent for a new card.
	Recall *float64 `json:"recall,omitempty"`
}

type statesResponse struct {
	Cards map[string]cardStatus `json:"cards,omitempty"`
	Error string                `json:"error,omitempty"`
}

// states reads the deck the browser keeps and predicts each card's recall
// now, so that the forgetting curve has no second implementation in
// JavaScript.
func (s *site) states(w http.ResponseWriter, r *http.Request) {
	var req statesRequest
	if status, err := decodeJSON(w, r, statesLimit, &req, `{"states":{"card-id":{…}},"now":"RFC 3339"}`); err != nil {
		httpx.JSON(w, status, statesResponse{Error: "states body " + err.Error()})
		return
	}
	if len(req.States) > maxStates {
		httpx.JSON(w, http.StatusBadRequest, statesResponse{Error: fmt.Sprintf("%d card states sent, at most %d are read", len(req.States), maxStates)})
		return
	}
	now := s.clock(req.Now)
	out := map[string]cardStatus{}
	// Sorted, so that the error named for a bad deck is always the same one.
	ids := make([]string, 0, len(req.States))
	for id := range req.States {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st, err := quiz.DecodeState(req.States[id])
		if err != nil {
			httpx.JSON(w, http.StatusBadRequest, statesResponse{Error: fmt.Sprintf("card %q: %v", id, err)})
			return
		}
		out[id] = cardStatus{State: st, Recall: recallAt(st, now)}
	}
	httpx.JSON(w, http.StatusOK, statesResponse{Cards: out})
}

// clock is the browser's time when it sent one, else the server's.
func (s *site) clock(sent *time.Time) time.Time {
	if sent != nil && !sent.IsZero() {
		return *sent
	}
	return s.now()
}

func recallAt(st quiz.State, at time.Time) *float64 {
	r, ok := st.Recall(at)
	if !ok {
		return nil
	}
	return &r
}

// decodeJSON reads one JSON object of at most limit bytes into v, with no
// unknown fields and nothing after it. The error, which completes "… body",
// says what was wrong and shows form, the shape expected; the status is 413
// for a body over the limit and 400 otherwise.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, form string) (int, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("is larger than the limit of %d bytes", mbe.Limit)
		}
		return http.StatusBadRequest, fmt.Errorf("is not valid JSON of the form %s: %w", form, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return http.StatusBadRequest, errors.New("has data after the JSON object")
	}
	return 0, nil
}

// previewRequest is the body of POST /flashcards/preview: the state of the
// card on screen, as for a review but without a rating.
type previewRequest struct {
	State json.RawMessage `json:"state"`
	Now   *time.Time      `json:"now,omitempty"`
}

// ratingOption is what one rating button would do.
type ratingOption struct {
	Rating quiz.Rating `json:"rating"`
	// Name is the button's word: Again, Hard, Good or Easy.
	Name string `json:"name"`
	// Interval is the wait before the card comes back, short enough for a
	// button: "1 min", "2 days", "3.5 months".
	Interval string `json:"interval"`
	// Days is the interval in whole days; 0 for Again.
	Days int       `json:"days"`
	Due  time.Time `json:"due"`
	// RecallAtDue is the predicted recall when the card comes back; absent
	// for Again, which is not scheduled by the forgetting curve.
	RecallAtDue *float64 `json:"recallAtDue,omitempty"`
}

type previewResponse struct {
	// Now is the clock the preview used; a review sent with the same now
	// gets exactly the intervals shown.
	Now     time.Time      `json:"now,omitzero"`
	Options []ratingOption `json:"options,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// preview runs the scheduler once per rating, so that each rating button can
// say what it will do before it is pressed.
func (s *site) preview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	if status, err := decodeJSON(w, r, reviewLimit, &req, `{"state":{…},"now":"RFC 3339"}`); err != nil {
		httpx.JSON(w, status, previewResponse{Error: "preview body " + err.Error()})
		return
	}
	state, err := quiz.DecodeState(req.State)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, previewResponse{Error: fmt.Sprintf("card state: %v", err)})
		return
	}
	now := s.clock(req.Now)
	next, err := quiz.Preview(state, now)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, previewResponse{Error: err.Error()})
		return
	}
	resp := previewResponse{Now: now}
	for i, st := range next {
		rating := quiz.Ratings[i]
		o := ratingOption{Rating: rating, Name: ratingName(rating), Interval: intervalText(st.Due.Sub(now)), Days: st.Interval, Due: st.Due}
		if rating != quiz.Again {
			o.RecallAtDue = recallAt(st, st.Due)
		}
		resp.Options = append(resp.Options, o)
	}
	httpx.JSON(w, http.StatusOK, resp)
}

// ratingName is the rating as its button names it.
func ratingName(r quiz.Rating) string {
	n := r.String()
	return strings.ToUpper(n[:1]) + n[1:]
}

// intervalText is a wait in the fewest words that stay exact enough to
// choose by: minutes under an hour, whole days under a month, then months
// and years to one decimal, as Anki's buttons show them.
func intervalText(d time.Duration) string {
	const month, year = 30 * 24 * time.Hour, 365 * 24 * time.Hour
	plural := func(n float64, unit string) string {
		s := strconv.FormatFloat(n, 'f', -1, 64)
		if n == 1 {
			return s + " " + unit
		}
		return s + " " + unit + "s"
	}
	switch {
	case d < time.Hour:
		return strconv.Itoa(max(1, int(math.Round(d.Minutes())))) + " min"
	case d < 24*time.Hour:
		return plural(math.Round(d.Hours()), "hour")
	case d < month:
		return plural(math.Round(d.Hours()/24), "day")
	case d < year:
		return plural(math.Round(10*float64(d)/float64(month))/10, "month")
	}
	return plural(math.Round(10*float64(d)/float64(year))/10, "year")
}
