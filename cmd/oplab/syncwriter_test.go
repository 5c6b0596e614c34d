package main

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// syncWriter lets the test read a child's stderr while exec copies into it.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String returns what was written so far.
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.w)
}

// readProc reads /proc/<pid>/<file>.
func readProc(pid int, file string) ([]byte, error) {
	return os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
}
