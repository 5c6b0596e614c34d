package instructor

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/classroom"
)

// ClassTimer is the class timer every page shows (classroom.Classroom).
type ClassTimer interface {
	StartTimer(label string, d time.Duration) error
	ClearTimer()
	Timer() (classroom.Timer, bool)
}

// TimerView is the timer section of the instructor page.
type TimerView struct {
	Enabled bool
	// Running is the timer set now (running or ended); nil: none.
	Running *classroom.Timer
	// Now is when the page was drawn, to say whether the time is up.
	Now time.Time
}

func init() {
	messages["timer-started"] = "Timer started: every learner's page counts it down."
	messages["timer-cleared"] = "Timer cleared from every page."
}

func (h *Handler) registerTimer(mux *http.ServeMux) {
	if h.opts.Timer == nil {
		return
	}
	mux.HandleFunc("POST /instructor/timer", h.guard(h.startTimer))
	mux.HandleFunc("POST /instructor/timer/clear", h.guard(h.clearTimer))
}

func (h *Handler) timerView() TimerView {
	if h.opts.Timer == nil {
		return TimerView{}
	}
	v := TimerView{Enabled: true, Now: time.Now()}
	if t, ok := h.opts.Timer.Timer(); ok {
		v.Running = &t
	}
	return v
}

// startTimer takes the form's minutes (a decimal number, so 0.5 is half a
// minute) and label, and starts the class timer.
func (h *Handler) startTimer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	raw := strings.TrimSpace(r.PostFormValue("minutes"))
	minutes, err := strconv.ParseFloat(raw, 64)
	if err != nil || minutes != minutes {
		http.Error(w, fmt.Sprintf("minutes: %q is not a number of minutes (such as 10, or 0.5 for half a minute)", raw), http.StatusBadRequest)
		return
	}
	// Bounded before the conversion: a float far out of range does not
	// convert to a Duration one can check.
	if minutes < 0 || minutes > classroom.MaxTimer.Minutes() {
		http.Error(w, fmt.Sprintf("minutes: %s is out of range: a class timer runs from %s to %s", raw, classroom.MinTimer, classroom.MaxTimer), http.StatusUnprocessableEntity)
		return
	}
	d := time.Duration(minutes * float64(time.Minute)).Round(time.Second)
	if err := h.opts.Timer.StartTimer(r.PostFormValue("label"), d); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	h.opts.Logger.Info("Started the class timer", "duration", d)
	http.Redirect(w, r, "/instructor?done=timer-started#class-timer-h", http.StatusSeeOther)
}

func (h *Handler) clearTimer(w http.ResponseWriter, r *http.Request) {
	h.opts.Timer.ClearTimer()
	h.opts.Logger.Info("Cleared the class timer")
	http.Redirect(w, r, "/instructor?done=timer-cleared#class-timer-h", http.StatusSeeOther)
}
