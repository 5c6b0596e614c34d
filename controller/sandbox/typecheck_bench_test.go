package sandbox

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"runtime"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// BenchmarkTypeCheck: what type-checking costs a compile, on oplab's own
// reconciler (the largest starter, importing nearly every package): the
// export data of its imports decoded afresh (a child compiles once) and
// the file checked, then the rewrites and the recorder on top (prepare).
// It prints the time, the bytes allocated and the heap still held while
// the result is in use, the memory a child carries into its compile.
func BenchmarkTypeCheck(b *testing.B) {
	src := starters.Source("oplab")
	pkg, serr := Check(src)
	if serr != nil {
		b.Fatal(serr)
	}
	check := func(b *testing.B) (any, any) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "reconciler.go", src, parser.SkipObjectResolution)
		if err != nil {
			b.Fatal(err)
		}
		p, info, errs := typeCheck(fset, f, pkg)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		return p, info
	}
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			check(b)
		}
		// Once more, outside the timing: the heap the result holds.
		before := heapInUse()
		p, info := check(b)
		held := heapInUse() - min(before, heapInUse())
		runtime.KeepAlive(p)
		runtime.KeepAlive(info)
		b.ReportMetric(float64(held)/(1<<20), "held-MiB")
		fmt.Printf("type check of the oplab starter: %s each, heap held while in use %.1f MiB\n",
			b.Elapsed()/time.Duration(b.N), float64(held)/(1<<20))
	})
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, serr := prepare(src, pkg); serr != nil {
				b.Fatal(serr)
			}
		}
		fmt.Printf("type check, rewrites and recorder of the oplab starter: %s each\n", b.Elapsed()/time.Duration(b.N))
	})
	b.Run("parse-only", func(b *testing.B) {
		// For scale: what the child did before type checking.
		for b.Loop() {
			f, err := parser.ParseFile(token.NewFileSet(), "reconciler.go", src, parser.SkipObjectResolution)
			if err != nil {
				b.Fatal(err)
			}
			ast.Inspect(f, func(ast.Node) bool { return true })
		}
	})
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
