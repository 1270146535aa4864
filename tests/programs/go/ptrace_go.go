// tests/programs/go/ptrace_go.go - a Go program (statically linked, raw
// system calls, its own threads and scheduler) for detrec --ptrace
// (tests/e2e/test_ptrace.py builds it with the go command).
//
// It prints 8 random bytes (crypto/rand: getrandom), the time (vDSO unless
// det hides it), then two goroutines print their lines in whatever order
// they run, each line under a mutex.
//
// Rules: output is the only thing the test compares; the random bytes and
// the time change from run to run.
package main

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"
)

func main() {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	fmt.Printf("random %x\ntime %d\n", b, time.Now().UnixNano())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				mu.Lock()
				fmt.Printf("g%d %d\n", g, i)
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
}
