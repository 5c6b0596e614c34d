package learn

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkPages measures serving each page from memory (no network) and
// reports its size.
func BenchmarkPages(b *testing.B) {
	c, err := LoadContent()
	if err != nil {
		b.Fatal(err)
	}
	s := newSite(c, time.Now)
	mux := http.NewServeMux()
	s.register(mux)
	for _, path := range []string{"/", "/lessons/status-owners-finalizers", "/quiz", "/flashcards"} {
		b.Run(path, func(b *testing.B) {
			size := 0
			for b.Loop() {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s = %d", path, rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
