package lab

import (
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// A Database whose pitfall is hidden (controller.PitfallHiddenAnnotation,
// set by a challenge that asks which Database has which pitfall) shows
// "pitfall: hidden", whether one is on or not, and its menu offers to keep
// it as it is without saying what that is. Picking anything else in the
// menu is the learner's own choice, so it clears the hiding as well.

// keepHiddenPitfall is the menu's value for "keep it as it is".
const keepHiddenPitfall = controller.PitfallHidden

// pitfallHidden reports whether d's pitfall is hidden from the learner.
func pitfallHidden(d dbview.Database) bool { return d.Pitfall == controller.PitfallHidden }

// hiddenPitfallNote is what the card says of a hidden pitfall.
const hiddenPitfallNote = "A pitfall may be switched on here, or none: which one is for you to find from what the timeline shows."

// findPitfall is the pitfall named name, for the card to say what the one
// switched on does.
func findPitfall(pfs []controller.PitfallInfo, name string) (controller.PitfallInfo, bool) {
	for _, pf := range pfs {
		if name != "" && pf.Name == name {
			return pf, true
		}
	}
	return controller.PitfallInfo{}, false
}

// stoppedWhy is the line beside Pause and Resume while the instructor has
// stopped the controller for everyone: the pause is not what holds the
// namespace then, and saying "Not paused" beside "Controller stopped" read
// as a contradiction. Who stopped it and why is under the banner.
const stoppedWhy = "The instructor stopped the controller for everyone: nothing reconciles until they start it (who and why is said above); Pause and Resume still work, and take effect then."

// pauseWhy says why one of Pause and Resume is disabled. The page carries
// both sentences, and lab/loop.js shows the one the pause calls for.
func pauseWhy(paused bool) string {
	if paused {
		return "Paused: Resume lets the controller reconcile your namespace again."
	}
	return "Not paused: Resume has nothing to do until you pause."
}
