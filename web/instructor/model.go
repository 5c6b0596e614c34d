package instructor

// Login is the view model of the token form.
type Login struct {
	// Error says why the token was refused; empty on first visit.
	Error string
}

// Page is the view model of the instructor page.
type Page struct {
	ControllerRunning bool
	// Message is the key of the last action's outcome (see messages).
	Message string
	Demo    DemoView
	// Roster lists the learners; nil when the page has none.
	Roster  *RosterView
	Present PresentView
	Timer   TimerView
	// CanSpeak shows the broadcast and the stop's reason.
	CanSpeak bool
	// End is the end-class panel; Join the join panel.
	End  EndView
	Join JoinView
	// Refusal says why the form just sent did nothing.
	Refusal string
}

// Said is the text of the last action's outcome, or "".
func (p Page) Said() string { return messages[p.Message] }
