package classroom

// Narration is what a scripted demo says to the room at one of its steps
// (contract 1 of this session: the demo runner in web/demo calls
// (*Classroom).Narrate with it). An empty Text clears it.
type Narration struct {
	// Demo is the demo's title.
	Demo string `json:"demo"`
	// Step is the step's number, from 1; Of is the number of steps.
	Step int `json:"step"`
	Of   int `json:"of"`
	// Text is the step's narration, written for a room.
	Text string `json:"text"`
	// Paused is set while the instructor holds the demo at this step.
	Paused bool `json:"paused"`
}
