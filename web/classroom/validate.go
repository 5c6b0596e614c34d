package classroom

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxPathLen bounds a path followers are sent to.
const MaxPathLen = 512

// LocalPath checks that href is a path on this oplab, such as
// /lab?scenario=NAME or /learn/SLUG: every learner's browser goes there, so
// it must never lead off the site.
func LocalPath(href string) error {
	switch {
	case href == "":
		return errors.New("empty: want a local path such as /lab?scenario=NAME or /learn/SLUG")
	case len(href) > MaxPathLen:
		return fmt.Errorf("%d bytes long: at most %d", len(href), MaxPathLen)
	case !strings.HasPrefix(href, "/") || strings.HasPrefix(href, "//") || strings.HasPrefix(href, `/\`):
		return errors.New("not a local path: want one starting with a single /, such as /lab?scenario=NAME or /learn/SLUG")
	case strings.ContainsFunc(href, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == '\\' }):
		return errors.New("contains spaces, backslashes or control characters")
	}
	u, err := url.Parse(href)
	if err != nil {
		return fmt.Errorf("not a URL path: %w", err)
	}
	if u.Scheme != "" || u.Host != "" || u.User != nil {
		return errors.New("names a scheme or host: want a path on this oplab")
	}
	return nil
}

// MaxSpeed and MinSpeed bound the playback speed a presenter reports: the
// live lab plays at 1× or in slow motion.
const (
	MaxSpeed = 1
	MinSpeed = 0.05
)

// Validate says what is wrong with a view a browser reported, naming the
// field.
func (v View) Validate() error {
	if v.Selected != "" {
		if errs := validation.IsDNS1123Subdomain(v.Selected); len(errs) > 0 {
			return fmt.Errorf("selected %q is not a Database name: %s", v.Selected, strings.Join(errs, "; "))
		}
	}
	if err := LocalPath(v.Path); err != nil {
		return fmt.Errorf("path %q: %w", v.Path, err)
	}
	if v.Speed < MinSpeed || v.Speed > MaxSpeed {
		return fmt.Errorf("speed %g: want from %g (slow motion) to %d (live)", v.Speed, MinSpeed, MaxSpeed)
	}
	return nil
}
