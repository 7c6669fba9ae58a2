package raftrand

import (
	"bytes"
	"crypto/rand"
	"math/big"
	"slices"
	"sync"
	"testing"
)

type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		c.n++
		p[i] = c.n
	}
	return len(p), nil
}

// Inside With, crypto/rand.Int (what raft calls) draws from the given reader, the same
// values for the same stream; afterwards the real reader is back.
func TestWithReplacesAndRestoresTheReader(t *testing.T) {
	saved := rand.Reader
	draw := func() (out []int64) {
		With(&counter{}, func() {
			for range 4 {
				v, err := rand.Int(rand.Reader, big.NewInt(1000))
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v.Int64())
			}
		})
		return out
	}
	a, b := draw(), draw()
	if len(a) != 4 || !slices.Equal(a, b) {
		t.Fatalf("same stream, different draws: %v %v", a, b)
	}
	if rand.Reader != saved {
		t.Fatalf("the real reader was not put back")
	}
}

// Concurrent callers do not see each other's reader.
func TestWithSerializes(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := bytes.NewReader(bytes.Repeat([]byte{byte(i)}, 64))
			With(mine, func() {
				if rand.Reader != mine {
					t.Errorf("caller %d saw another caller's reader", i)
				}
			})
		}()
	}
	wg.Wait()
}
