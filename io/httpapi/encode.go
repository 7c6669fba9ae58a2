package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/narad/narad/core/node"
)

// Messages are encoded by hand rather than through encoding/json: a payload that is valid
// JSON must reach the client verbatim, and json.Marshal would compact a json.RawMessage.

// writeJSONBytes answers status with body as application/json and returns status.
func writeJSONBytes(w http.ResponseWriter, status int, body []byte) int {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone mid-answer has nothing left to tell
	return status
}

var jsonContentType = []string{"application/json"}

// writeJSON answers status with v marshalled by encoding/json.
func writeJSON(w http.ResponseWriter, status int, v any) (int, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, err // a programmer error: every value written here is marshallable
	}
	return writeJSONBytes(w, status, body), nil
}

// appendMessage appends m as the API's Message object:
// {"topic","partition","offset","key"?,"key_encoding"?,"payload","payload_encoding"?,
// "timestamp","receipt_handle"?}.
func appendMessage(b []byte, m *node.Message) []byte {
	b = append(b, `{"topic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendUint(b, uint64(m.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendUint(b, m.Offset, 10)
	if m.HasKey {
		b = append(b, `,"key":`...)
		if utf8.Valid(m.Key) {
			b = appendString(b, m.Key)
		} else {
			b = appendBase64(b, m.Key)
			b = append(b, `,"key_encoding":"base64"`...)
		}
	}
	b = append(b, `,"payload":`...)
	b = appendPayload(b, m.Payload)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.TimestampMs/1000, 10)
	if m.ReceiptHandle != "" {
		b = append(b, `,"receipt_handle":`...)
		b = appendString(b, m.ReceiptHandle)
	}
	return append(b, '}')
}

// appendPayload appends the value of "payload" (and "payload_encoding" when needed): the
// payload verbatim when it is valid JSON (in valid UTF-8), a JSON string when it is other
// UTF-8 text, and base64 otherwise.
func appendPayload(b, p []byte) []byte {
	if utf8.Valid(p) {
		if json.Valid(p) {
			return append(b, p...)
		}
		return appendString(b, p)
	}
	b = appendBase64(b, p)
	return append(b, `,"payload_encoding":"base64"`...)
}

// appendBase64 appends p as a JSON string of its standard, padded base64.
func appendBase64(b, p []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD (callers send
// bytes that are not UTF-8 as base64 instead); U+2028 and U+2029 are escaped so that the
// output is also valid JavaScript.
func appendString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			b = appendEscapedByte(b, c)
			i++
			start = i
			continue
		}
		// A conversion of at most 4 bytes needs no allocation.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			switch r {
			case utf8.RuneError:
				b = append(b, `\ufffd`...)
			default:
				b = append(b, `\u202`...)
				b = append(b, hexDigits[r&0xF])
			}
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscapedByte appends the escape of an ASCII byte that may not appear raw in a JSON
// string: a quote, a backslash or a control character.
func appendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// topicJSON is the API's Topic object.
type topicJSON struct {
	Name                    string `json:"name"`
	ID                      uint64 `json:"id"`
	Partitions              uint32 `json:"partitions"`
	RetentionMs             int64  `json:"retention_ms"`
	VisibilityTimeoutMs     int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition uint32 `json:"max_in_flight_per_partition"`
	CreatedAt               int64  `json:"created_at"` // Unix seconds
}

func encodeTopic(t node.Topic) topicJSON {
	return topicJSON{
		Name: t.Name, ID: t.ID, Partitions: t.Partitions, RetentionMs: t.RetentionMs,
		VisibilityTimeoutMs: t.VisibilityTimeoutMs, MaxInFlightPerPartition: t.MaxInFlightPerPartition,
		CreatedAt: t.CreatedAtMs / 1000,
	}
}

// topicDetailJSON is GET /v1/topics/{topic}: a Topic with its partitions' stats.
type topicDetailJSON struct {
	topicJSON
	PartitionStats []partitionStatsJSON `json:"partition_stats"`
}

type partitionStatsJSON struct {
	Index         uint32 `json:"index"`
	HighWatermark uint64 `json:"high_watermark"`
	OldestOffset  uint64 `json:"oldest_offset"`
	NextOffset    uint64 `json:"next_offset"`
	OwnerNode     string `json:"owner_node"`
	SizeBytes     int64  `json:"size_bytes"`
	InFlight      int    `json:"in_flight"`
	// State is "failed" while the partition waits for its reopen (an addition to API.md's
	// fields, absent when healthy).
	State string `json:"state,omitempty"`
}

func encodeTopicDetail(t node.Topic, stats []node.PartitionStats) topicDetailJSON {
	d := topicDetailJSON{topicJSON: encodeTopic(t), PartitionStats: make([]partitionStatsJSON, len(stats))}
	for i, p := range stats {
		d.PartitionStats[i] = partitionStatsJSON{
			Index: p.Index, HighWatermark: p.HighWatermark, OldestOffset: p.OldestOffset,
			NextOffset: p.NextOffset, OwnerNode: p.OwnerNode, SizeBytes: p.SizeBytes, InFlight: p.InFlight,
		}
		if p.Failed {
			d.PartitionStats[i].State = "failed"
		}
	}
	return d
}

// topicListJSON is GET /v1/topics. NextPageToken is always present: "" when the listing
// is done.
type topicListJSON struct {
	Topics        []topicJSON `json:"topics"`
	NextPageToken string      `json:"next_page_token"`
}

// ackResultJSON is one line of a batch ack's results.
type ackResultJSON struct {
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}
