package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// partitionDirs lists the partition directories (logs and acks) of incarnation id in the
// data directory dir.
func partitionDirs(t *testing.T, dir string, id uint64) []string {
	t.Helper()
	var out []string
	for _, root := range []string{"parts", "acks"} {
		m, err := filepath.Glob(filepath.Join(dir, root, fmt.Sprintf("%016x-*", id)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// A deleted topic's files leave the data directory: at once after the delete, and, for
// files a crash during their removal left behind (put back here by hand), at the next
// start. A live topic keeps its files throughout.
func TestDeletedTopicFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, nil)
	gone := d.createTopic(`{"name":"gone","partitions":2}`)
	kept := d.createTopic(`{"name":"kept","partitions":1}`)
	for p := range 2 {
		d.produce(http.StatusAccepted, "gone", fmt.Sprintf("partition=%d", p), []byte("bytes of gone"))
	}
	d.produce(http.StatusAccepted, "kept", "", []byte("bytes of kept"))
	d.waitCommitted("gone", 2)
	d.waitCommitted("kept", 1)
	msg := d.consumeOne("gone", "")
	d.ack(http.StatusNoContent, "gone", msg.ReceiptHandle, "")
	before := partitionDirs(t, dir, gone.ID)
	if len(before) < 2 {
		t.Fatalf("setup: the topic's partition directories are %v", before)
	}
	saved := t.TempDir()
	if err := os.CopyFS(saved, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	d.expect(http.StatusNoContent, http.MethodDelete, "/v1/topics/gone", nil, nil)
	eventually(t, startBound, "the deleted topic's directories are removed", func() bool {
		return len(partitionDirs(t, dir, gone.ID)) == 0
	})
	if d.shutdown() != 0 {
		t.Fatal("narad did not exit cleanly")
	}

	for _, p := range before { // a crash in the middle of the removal
		rel, _ := filepath.Rel(dir, p)
		if err := os.CopyFS(p, os.DirFS(filepath.Join(saved, rel))); err != nil {
			t.Fatal(err)
		}
	}
	d = startDaemon(t, dir, nil, nil)
	eventually(t, startBound, "a restart removes what the deleted topic left", func() bool {
		return len(partitionDirs(t, dir, gone.ID)) == 0
	})
	if got := partitionDirs(t, dir, kept.ID); len(got) == 0 {
		t.Fatal("the live topic lost its directories")
	}
	if m := d.consumeOne("kept", "wait=5s"); m.text(t) != "bytes of kept" {
		t.Fatalf("the live topic answers %q", m.text(t))
	}
}
