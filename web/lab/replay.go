package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oplab-dev/oplab/web/stream"
)

// maxExportBytes limits an uploaded export: a timeline can be large.
const maxExportBytes = 32 << 20

// export downloads the caller's recorded timeline.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	e := h.opts.Exporter.Export(ns)
	name := fmt.Sprintf("oplab-timeline-%s-%s.json", ns, time.Now().UTC().Format("20060102-150405"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(e)
}

func (h *Handler) replayForm(w http.ResponseWriter, r *http.Request) {
	render(w, r, http.StatusOK, ReplayView(ReplayPage{}))
}

// replay validates an uploaded export and plays it back, read-only: the
// page it renders has no forms that write to the cluster.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxExportBytes)
	fail := func(code int, format string, args ...any) {
		render(w, r, code, ReplayView(ReplayPage{Error: fmt.Sprintf(format, args...)}))
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(http.StatusRequestEntityTooLarge, "file: larger than the %d MiB limit", maxExportBytes>>20)
			return
		}
		fail(http.StatusBadRequest, "file: choose an exported timeline (.json) to open: %v", err)
		return
	}
	defer f.Close()
	e, err := stream.ReadExport(f)
	if err != nil {
		fail(http.StatusUnprocessableEntity, "%s is not an oplab timeline: %v", hdr.Filename, err)
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		fail(http.StatusInternalServerError, "encode the timeline: %v", err)
		return
	}
	render(w, r, http.StatusOK, ReplayView(ReplayPage{File: hdr.Filename, Namespace: e.Namespace, Messages: len(e.Messages), Export: b}))
}
