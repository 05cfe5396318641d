package grade

import (
	"runtime"
	"sync"
)

// forEach runs fn(i) for every i in [0, n) on GOMAXPROCS workers: grading
// is query execution, which parallelises across cores. It returns the error
// of the lowest i that failed.
func forEach(n int, fn func(i int) error) error {
	errs := make([]error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = fn(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
