package classroom

import "testing"

func TestPresenceCountsOpenAndFollowingPagesUntilReleased(t *testing.T) {
	var p Presence
	if o, f := p.Of("lab-a"); o != 0 || f != 0 {
		t.Fatalf("empty presence: %d open, %d following; want 0, 0", o, f)
	}
	own := p.Open("lab-a", false)
	follow := p.Open("lab-a", true)
	other := p.Open("lab-b", true)
	if o, f := p.Of("lab-a"); o != 2 || f != 1 {
		t.Errorf("lab-a: %d open, %d following; want 2, 1", o, f)
	}
	follow()
	follow() // a second release counts once
	if o, f := p.Of("lab-a"); o != 1 || f != 0 {
		t.Errorf("lab-a after the follower closed: %d open, %d following; want 1, 0", o, f)
	}
	own()
	other()
	if o, _ := p.Of("lab-a"); o != 0 {
		t.Errorf("lab-a after every page closed: %d open, want 0", o)
	}
	if len(p.open) != 0 {
		t.Errorf("presence keeps %d namespaces with nothing open", len(p.open))
	}
}
