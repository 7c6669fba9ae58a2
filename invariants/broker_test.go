package invariants_test

import (
	"bytes"
	"testing"

	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/invariants"
)

func batch(base uint64, payload string) []byte {
	return plog.AppendBatch(nil, base, 0, []plog.Entry{{Payload: []byte(payload)}})
}

// A valid frame of another log that lands past a damaged frame (a misdirected write)
// with a base offset below the end of the frames before it is not a record of this
// partition: recovery skips it (core/plog rows R2 and R4), so the image does too. Cluster
// seed 614394 reported a false invariant-4 violation when the later frame won.
func TestBrokerImageIgnoresAFrameBelowTheOffsetsBeforeIt(t *testing.T) {
	var seg []byte
	seg = append(seg, batch(0, "id:1:a")...)
	seg = append(seg, batch(1, "id:2:b")...)
	seg = append(seg, batch(2, "id:3:c")...)
	seg = append(seg, bytes.Repeat([]byte{0xee}, 12)...) // the damaged start of offset 3
	seg = append(seg, batch(2, "id:9:foreign")...)       // another log's offset 2
	seg = append(seg, batch(4, "id:5:e")...)             // a frame that can follow
	img := invariants.ReadBrokerImage(map[string][]byte{"parts/t-0/0000000000000000.log": seg}, invariants.MessageID)
	log := img.Parts["t-0"]
	if got := string(log[2]); got != "id:3:c" {
		t.Fatalf("offset 2 reads %q, want the frame in its place, id:3:c", got)
	}
	if got := string(log[4]); got != "id:5:e" {
		t.Fatalf("offset 4 reads %q, want id:5:e (a frame above the damage still counts)", got)
	}
	if img.IDs[9] {
		t.Fatalf("the foreign frame's message is credited to the image")
	}
}

// Segments are read in name order, and the offsets carry over from one to the next.
func TestBrokerImageCarriesOffsetsAcrossSegments(t *testing.T) {
	files := map[string][]byte{
		"parts/t-0/0000000000000000.log": append(batch(0, "id:1:a"), batch(1, "id:2:b")...),
		"parts/t-0/0000000000000002.log": append(batch(2, "id:3:c"), batch(0, "id:9:stale")...),
	}
	log := invariants.ReadBrokerImage(files, invariants.MessageID).Parts["t-0"]
	if string(log[0]) != "id:1:a" || string(log[2]) != "id:3:c" {
		t.Fatalf("offsets 0 and 2 read %q and %q", log[0], log[2])
	}
}

// A frame of another partition, tagged with its own directory (plog.AppendBatchFor), is
// not a record of this one wherever it lands: recovery's check fails it, and so does the
// image's (cluster seed 8865, where one sat past a torn tail at offsets of another epoch).
func TestBrokerImageIgnoresAnotherPartitionsFrame(t *testing.T) {
	seg := plog.AppendBatchFor(nil, "parts/t-0", 0, 0, []plog.Entry{{Payload: []byte("id:1:a")}})
	seg = append(seg, bytes.Repeat([]byte{0xee}, 12)...) // a torn frame
	seg = append(seg, plog.AppendBatchFor(nil, "parts/t-1", 1<<40, 0, []plog.Entry{{Payload: []byte("id:9:foreign")}})...)
	img := invariants.ReadBrokerImage(map[string][]byte{"parts/t-0/0000000000000000.log": seg}, invariants.MessageID)
	if log := img.Parts["t-0"]; string(log[0]) != "id:1:a" || len(log) != 1 || img.IDs[9] {
		t.Fatalf("the image holds %v, ids %v: want offset 0 only", log, img.IDs)
	}
}
