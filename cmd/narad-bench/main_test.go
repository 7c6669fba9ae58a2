package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestBareModeCounts(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-mode", "bare", "-workers", "4", "-duration", "300ms", "-json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if r.Mode != modeBare || r.Workers != 4 || r.Requests == 0 || r.Messages != r.Requests || r.Errors != 0 || len(r.Statuses) != 0 {
		t.Fatalf("result %+v", r)
	}
	if r.DurationS < 0.3 || r.DurationS > 5 {
		t.Fatalf("run took %vs for -duration 300ms", r.DurationS)
	}
	out.Reset()
	if code := run(context.Background(), []string{"-mode", "bare", "-workers", "2", "-duration", "50ms"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "mode=bare workers=2") || !strings.Contains(out.String(), "p99") {
		t.Fatalf("text report, exit %d:\n%s", code, out.String())
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7942", "127.1.2.3:1", "[::1]:7942", "localhost:7942", "LOCALHOST:1"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"10.0.0.1:7942", "192.168.1.5:80", "0.0.0.0:7942", "[2001:db8::1]:7942", "example.com:80", "127.0.0.1", "localhost", "", "128.0.0.1:1"} {
		if err := checkLoopback(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-addr", "10.1.2.3:7942", "-mode", "produce"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "non-loopback") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "nope"},
		{"-workers", "0"},
		{"-duration", "0s"},
		{"-size", "0"},
		{"-size", "2000000"},
		{"-mode", "consume-ack", "-batch", "101"},
		{"-mode", "produce-batch", "-batch", "1001"},
		{"-topic", ".."},
		{"-topic", "a/b"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
