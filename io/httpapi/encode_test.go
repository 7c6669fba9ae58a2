package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/narad/narad/core/node"
)

func nodeMsgKey(k string) node.ProduceMessage {
	return node.ProduceMessage{Key: []byte(k), HasKey: true, Partition: -1}
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(method, target string, body io.Reader) *http.Request {
	return httptest.NewRequest(method, target, body)
}

// TestPayloadEncoding is API.md's rule: a payload is verbatim when it is valid JSON, a JSON
// string when it is other UTF-8 text, base64 with payload_encoding otherwise; a key is a
// string when it is UTF-8, base64 with key_encoding otherwise.
func TestPayloadEncoding(t *testing.T) {
	cases := []struct {
		name    string
		payload []byte
		key     []byte // nil: no key
		want    string // the message's fields from "key" or "payload" to before "timestamp"
	}{
		{"json object verbatim", []byte(`{"a": [1, 2.5]}`), nil, `"payload":{"a": [1, 2.5]}`},
		{"json number verbatim", []byte(`42`), nil, `"payload":42`},
		{"json string verbatim", []byte(`"quoted"`), nil, `"payload":"quoted"`},
		{"json with surrounding space verbatim", []byte(" [true]\n"), nil, "\"payload\": [true]\n"},
		{"json null verbatim", []byte(`null`), nil, `"payload":null`},
		{"text becomes a string", []byte("hello world"), nil, `"payload":"hello world"`},
		{"text with escapes", []byte("a\"b\\c\nd\te\x01"), nil, `"payload":"a\"b\\c\nd\te\u0001"`},
		{"unicode text", []byte("héllo ✓ \u2028"), nil, `"payload":"héllo ✓ \u2028"`},
		{"broken json is text", []byte(`{"a":`), nil, `"payload":"{\"a\":"`},
		{"binary is base64", []byte{0xff, 0x00, 0xfe}, nil, `"payload":"/wD+","payload_encoding":"base64"`},
		{"json with invalid utf-8 is base64", []byte("\"\xff\""), nil, `"payload":"Iv8i","payload_encoding":"base64"`},
		{"utf-8 key", []byte("x"), []byte("user-ü"), `"key":"user-ü","payload":"x"`},
		{"empty key", []byte("x"), []byte{}, `"key":"","payload":"x"`},
		{"binary key", []byte("x"), []byte{0x80}, `"key":"gA==","key_encoding":"base64","payload":"x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := node.Message{Topic: "t", Partition: 2, Offset: 9, Payload: c.payload, TimestampMs: 1_700_000_000_999, ReceiptHandle: "r"}
			m.Key, m.HasKey = c.key, c.key != nil
			got := string(appendMessage(nil, &m))
			want := `{"topic":"t","partition":2,"offset":9,` + c.want + `,"timestamp":1700000000,"receipt_handle":"r"}`
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not valid JSON: %s", got)
			}
		})
	}
}

func TestAppendString(t *testing.T) {
	cases := map[string]string{
		"":             `""`,
		"plain":        `"plain"`,
		"<&>":          `"<&>"`,
		"\x00\x1f\r":   `"\u0000\u001f\r"`,
		"bad \xff end": `"bad \ufffd end"`,
		"\u2029":       `"\u2029"`,
		"€\xe2\x82":    `"€\ufffd\ufffd"`,
	}
	for in, want := range cases {
		if got := string(appendString(nil, in)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", in, got, want)
		}
		if got := string(appendString(nil, []byte(in))); got != want {
			t.Errorf("appendString([]byte(%q)) = %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(want), &back); err != nil {
			t.Errorf("%s does not decode: %v", want, err)
		}
	}
}

// TestStatusOf is the error mapping, row by row.
func TestStatusOf(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("message 3: %w", err) }
	cases := []struct {
		err     error
		status  int
		message string
	}{
		{node.ErrTopicNotFound, 404, "topic not found"},
		{node.ErrTopicExists, 409, "topic already exists"},
		{fmt.Errorf("%w: partitions must grow", node.ErrInvalid), 400, "invalid request: partitions must grow"},
		{node.ErrPartitionRange, 400, "partition out of range"},
		{wrapped(node.ErrPartitionRange), 400, "message 3: partition out of range"},
		{node.ErrBusy, 429, "over the in-flight cap"},
		{node.ErrWALFailed, 500, "the write-ahead log failed"},
		{node.ErrMetastoreFailed, 500, "the metastore failed"},
		{node.ErrCorrupt, 500, "record failed its checksum"},
		{node.ErrShuttingDown, 503, "node shutting down"},
		{fmt.Errorf("%w: recovering", node.ErrNotReady), 503, "node not ready: recovering"},
		{node.ErrLeaseGone, 410, "lease no longer valid"},
		{node.ErrBadHandle, 410, "malformed receipt handle"},
		{node.ErrOffsetRemoved, 410, "offset removed by retention"},
		{context.DeadlineExceeded, 503, "context deadline exceeded"},
		{context.Canceled, 503, "context canceled"},
		{fmt.Errorf("waiting: %w", context.Canceled), 503, "waiting: context canceled"},
		{&http.MaxBytesError{Limit: 10}, 413, "body over 10 bytes"},
		{errContentType, 415, errContentType.msg},
		{errMethodNotAllowed, 405, "method not allowed"},
		{errors.New("disk on fire"), 500, "disk on fire"},
	}
	for _, c := range cases {
		status, msg := statusOf(c.err)
		if status != c.status || msg != c.message {
			t.Errorf("statusOf(%v) = %d %q, want %d %q", c.err, status, msg, c.status, c.message)
		}
	}
}

func TestProduceParams(t *testing.T) {
	cases := []struct {
		query   string
		want    string // key/hasKey/partition, or the error
		wantErr bool
	}{
		{"", `""/false/-1`, false},
		{"partition=0", `""/false/0`, false},
		{"key=a%20b+c&partition=12", `"a b c"/true/12`, false},
		{"key=", `""/true/-1`, false},
		{"key=x&key=y&partition=1&partition=bad", `"x"/true/1`, false},
		{"other=%41&flag", `""/false/-1`, false},
		{"partition=9223372036854775807", `""/false/9223372036854775807`, false},
		{"partition=9223372036854775808", "", true},
		{"partition=+1", "", true},
		{"partition=-1", "", true},
		{"partition=", "", true},
		{"key=%", "", true},
		{"x=%4", "", true},
		{"key=" + strings.Repeat("k", 4096), fmt.Sprintf("%q/true/-1", strings.Repeat("k", 4096)), false},
		{"key=" + strings.Repeat("k", 4097), "", true},
	}
	for _, c := range cases {
		m, err := produceParams(c.query)
		if (err != nil) != c.wantErr {
			t.Errorf("produceParams(%.40q): error %v, want error %v", c.query, err, c.wantErr)
			continue
		}
		if got := fmt.Sprintf("%q/%v/%d", m.Key, m.HasKey, m.Partition); err == nil && got != c.want {
			t.Errorf("produceParams(%.40q) = %.60s, want %.60s", c.query, got, c.want)
		}
	}
}

func TestContentTypeRule(t *testing.T) {
	cases := []struct {
		header http.Header
		ok     bool
	}{
		{http.Header{}, false},
		{http.Header{"Content-Type": {"application/octet-stream"}}, true},
		{http.Header{"Content-Type": {"Application/JSON ; charset=utf-8"}}, true},
		{http.Header{"Content-Type": {"text/plain"}}, false},
		{http.Header{"Content-Type": {"application/jsonx"}}, false},
		{http.Header{"Content-Type": {""}}, false},
		{http.Header{"X-Narad-Client": {""}}, true},
		{http.Header{"X-Narad-Client": {"py/1"}, "Content-Type": {"text/plain"}}, true},
	}
	for _, c := range cases {
		if got := contentTypeOK(c.header); got != c.ok {
			t.Errorf("contentTypeOK(%v) = %v, want %v", c.header, got, c.ok)
		}
	}
}

func TestValidTopicName(t *testing.T) {
	for name, ok := range map[string]bool{
		"a": true, "A-z_0.9": true, "...": true, ".a": true, strings.Repeat("n", 200): true,
		"": false, ".": false, "..": false, strings.Repeat("n", 201): false,
		"a b": false, "a/b": false, "é": false, "a*": false, "a%2F": false,
	} {
		if validTopicName(name) != ok {
			t.Errorf("validTopicName(%.20q) = %v, want %v", name, !ok, ok)
		}
	}
}
