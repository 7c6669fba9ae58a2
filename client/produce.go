package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"
)

// Limits of the produce routes (API.md).
const (
	MessageBytesMax = 1 << 20  // one message
	BatchMax        = 1000     // messages of one batch
	BatchBytesMax   = 16 << 20 // one batch body, encoded
)

// ProduceOption changes one Produce or ProduceBatch.
type ProduceOption func(*produceOpts)

type produceOpts struct {
	key          *string
	partition    *uint32
	mayDuplicate bool
}

// WithKey picks the partition by the key's hash (Produce only; a batch message has its
// own Key).
func WithKey(key string) ProduceOption { return func(o *produceOpts) { o.key = &key } }

// WithPartition pins the partition; it wins over a key (Produce only).
func WithPartition(p uint32) ProduceOption { return func(o *produceOpts) { o.partition = &p } }

// RetryMayDuplicate lets the client retry a produce after an answer that does not say
// whether the message was stored: a 503, a 500, a connection cut after the request was
// sent, a timeout. Such a retry MAY STORE THE MESSAGE TWICE: use it only when consumers
// tolerate duplicates (delivery is at-least-once anyway). Without it a produce is retried
// only when nothing can have been stored: 429, 507, and a connection never made (which
// also moves it to the next node).
func RetryMayDuplicate() ProduceOption { return func(o *produceOpts) { o.mayDuplicate = true } }

func produceOptions(opts []ProduceOption) produceOpts {
	var o produceOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Produce sends one message of 1 byte to 1 MiB. It returns nil once the receiving node
// answered 202: the message is durable in its write-ahead log. An error that is not a
// 4xx (see StatusOf) leaves it unknown whether the message was stored.
func (c *Client) Produce(ctx context.Context, topic string, payload []byte, opts ...ProduceOption) error {
	o := produceOptions(opts)
	q := url.Values{}
	if o.key != nil {
		q.Set("key", *o.key)
	}
	if o.partition != nil {
		q.Set("partition", strconv.FormatUint(uint64(*o.partition), 10))
	}
	if payload == nil {
		payload = []byte{}
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: pathOf("/v1/topics", topic) + "/produce", query: q,
		body: payload, contentType: "application/octet-stream", produce: true, mayDuplicate: o.mayDuplicate})
	return err
}

// BatchMessage is one message of ProduceBatch.
type BatchMessage struct {
	Payload   []byte
	Key       *string // nil: no key
	Partition *uint32 // nil: by key, else round-robin
}

type batchMessageJSON struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding,omitempty"`
	Key             *string         `json:"key,omitempty"`
	KeyEncoding     string          `json:"key_encoding,omitempty"`
	Partition       *uint32         `json:"partition,omitempty"`
}

// ProduceBatch sends 1 to 1,000 messages in one request (one group commit); the server
// validates all of them before it stores any. It returns how many were accepted: all of
// them on success. Payloads go base64-encoded, so they arrive byte for byte.
func (c *Client) ProduceBatch(ctx context.Context, topic string, msgs []BatchMessage, opts ...ProduceOption) (int, error) {
	if len(msgs) == 0 || len(msgs) > BatchMax {
		return 0, fmt.Errorf("narad client: a batch holds 1 to %d messages, not %d", BatchMax, len(msgs))
	}
	o := produceOptions(opts)
	body, err := EncodeBatch(msgs)
	if err != nil {
		return 0, err
	}
	a, err := c.do(ctx, call{method: http.MethodPost, path: pathOf("/v1/topics", topic) + "/produce/batch",
		body: body, contentType: "application/json", produce: true, mayDuplicate: o.mayDuplicate})
	if err != nil {
		return 0, err
	}
	var out struct {
		Accepted int `json:"accepted"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil {
		return 0, fmt.Errorf("produce batch: decode the answer: %w", err)
	}
	return out.Accepted, nil
}

// EncodeBatch is the body of a batch produce of msgs: {"messages":[…]}, payloads in
// base64, keys as strings (base64 when not UTF-8).
func EncodeBatch(msgs []BatchMessage) ([]byte, error) {
	out := make([]batchMessageJSON, len(msgs))
	for i, m := range msgs {
		p, err := json.Marshal(base64.StdEncoding.EncodeToString(m.Payload))
		if err != nil {
			return nil, err
		}
		out[i] = batchMessageJSON{Payload: p, PayloadEncoding: "base64", Partition: m.Partition}
		if m.Key != nil {
			k := *m.Key
			if !utf8.ValidString(k) {
				k, out[i].KeyEncoding = base64.StdEncoding.EncodeToString([]byte(k)), "base64"
			}
			out[i].Key = &k
		}
	}
	return json.Marshal(struct {
		Messages []batchMessageJSON `json:"messages"`
	}{out})
}
