package lessons

import (
	"testing"

	"github.com/oplab-dev/oplab/controller"
)

// BenchmarkLoad measures loading the whole course: cutting the controller
// regions and rendering every page. It runs once per process start.
func BenchmarkLoad(b *testing.B) {
	var c *Course
	for b.Loop() {
		var err error
		if c, err = Load(Content, controller.Source); err != nil {
			b.Fatal(err)
		}
	}
	size := 0
	for _, l := range c.Lessons {
		size += len(l.HTML)
	}
	b.ReportMetric(float64(len(c.Lessons)), "pages")
	b.ReportMetric(float64(size), "html-bytes")
}
