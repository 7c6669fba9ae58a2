package httpapi

import (
	"encoding/base64"
	"errors"
	"strconv"

	"github.com/narad/narad/core/node"
)

// The batch produce body (API.md):
//
//	{"messages":[{"payload":…, "payload_encoding":"base64"?, "key":"…"?,
//	              "key_encoding":"base64"?, "partition":N?}, …]}
//
// decodeBatchBody reads it in one pass with jsonScanner, keeping each field's text, then
// validates every message in order. It agrees with encoding/json decoding into
// {Payload json.RawMessage; PayloadEncoding string; Key *string; KeyEncoding string;
// Partition *int64} (the test holds it to that, fuzzed) except where it is stricter:
// field names are matched exactly (encoding/json folds case), a field given twice and a
// message that is not an object are errors (encoding/json lets the last one win, or
// decodes null as an empty message).
//
// Payloads sent as JSON values alias body, which the caller must not reuse; base64
// payloads are decoded into one buffer for the whole batch.

// batchFields are the field texts of one message; a zero span is an absent field.
type batchFields struct {
	payload, payloadEnc, key, keyEnc, partition span
}

func (f *batchFields) slot(name []byte) *span {
	switch string(name) {
	case `"payload"`:
		return &f.payload
	case `"payload_encoding"`:
		return &f.payloadEnc
	case `"key"`:
		return &f.key
	case `"key_encoding"`:
		return &f.keyEnc
	case `"partition"`:
		return &f.partition
	}
	return nil
}

func (sp span) present() bool { return sp.end > sp.start }

// decodeBatchBody returns the messages of a batch body and their total payload bytes.
// Every error is a 400.
func decodeBatchBody(body []byte) ([]node.ProduceMessage, int, error) {
	s := &jsonScanner{b: body}
	if s.peek() == 0 {
		return nil, 0, errEmptyBody
	}
	fields, err := scanBatch(s)
	if err != nil {
		return nil, 0, err
	}
	if len(fields) == 0 {
		return nil, 0, badRequest("messages: 1 to %d messages", produceBatchMax)
	}
	d := batchDecoder{s: s}
	d.arena = make([]byte, 0, d.base64Bytes(fields))
	msgs := make([]node.ProduceMessage, len(fields))
	total := 0
	for i := range fields {
		if msgs[i], err = d.message(&fields[i]); err != nil {
			return nil, 0, badRequest("message %d: %v", i, err)
		}
		total += len(msgs[i].Payload)
	}
	return msgs, total, nil
}

// scanBatch checks the whole body's syntax and collects each message's field texts.
func scanBatch(s *jsonScanner) ([]batchFields, error) {
	if s.peek() == 'n' { // null decodes as an empty request
		if _, err := s.literal("null"); err != nil {
			return nil, err
		}
		return nil, s.end()
	}
	var fields []batchFields
	seen := false
	err := s.object(func(name span) error {
		if string(s.text(name)) != `"messages"` {
			return s.fail("unknown field %s", s.text(name))
		}
		if seen {
			return s.fail("field \"messages\" given twice")
		}
		seen = true
		var err error
		fields, err = scanMessages(s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return fields, s.end()
}

// object scans an object at pos, calling member for each member as members does.
func (s *jsonScanner) object(member func(name span) error) error {
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++
	if err := s.members(member); err != nil {
		return err
	}
	s.leave()
	return nil
}

// scanMessages scans the messages array (or null: none).
func scanMessages(s *jsonScanner) ([]batchFields, error) {
	switch s.peek() {
	case 'n':
		_, err := s.literal("null")
		return nil, err
	case '[':
	default:
		return nil, s.fail("messages must be an array")
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	s.pos++
	fields := make([]batchFields, 0, 128)
	err := s.elements(func(i int) error {
		if i >= produceBatchMax {
			return badRequest("messages: 1 to %d messages", produceBatchMax)
		}
		fields = append(fields, batchFields{})
		return scanMessage(s, &fields[i], i)
	})
	s.leave()
	return fields, err
}

func scanMessage(s *jsonScanner, f *batchFields, i int) error {
	if s.peek() != '{' {
		return badRequest("message %d: must be an object", i)
	}
	return s.object(func(name span) error {
		slot := f.slot(s.text(name))
		if slot == nil {
			return s.fail("unknown field %s in message %d", s.text(name), i)
		}
		if slot.present() {
			return s.fail("field %s given twice in message %d", s.text(name), i)
		}
		var err error
		*slot, err = s.value()
		return err
	})
}

// batchDecoder turns field texts into ProduceMessages.
type batchDecoder struct {
	s     *jsonScanner
	arena []byte // the decoded base64 payloads of the batch
}

// base64Bytes bounds the decoded size of every payload that may be base64.
func (d *batchDecoder) base64Bytes(fields []batchFields) int {
	n := 0
	for i := range fields {
		if f := &fields[i]; f.payloadEnc.present() && f.payload.present() {
			n += base64.StdEncoding.DecodedLen(f.payload.end - f.payload.start)
		}
	}
	return n
}

// message validates one message in the order of API.md's rules: payload, its encoding
// and size, then key and partition.
func (d *batchDecoder) message(f *batchFields) (node.ProduceMessage, error) {
	m := node.ProduceMessage{Partition: -1}
	if !f.payload.present() {
		return m, errors.New("payload is required")
	}
	enc, err := d.encoding(f.payloadEnc, "payload_encoding")
	if err != nil {
		return m, err
	}
	switch enc {
	case "":
		m.Payload = d.s.text(f.payload)
	case "base64":
		if m.Payload, err = d.base64Payload(f.payload); err != nil {
			return m, err
		}
	default:
		return m, errors.New(`payload_encoding must be "base64" or absent`)
	}
	if len(m.Payload) == 0 || len(m.Payload) > payloadBytesMax {
		return m, errors.New("payload must be 1 byte to 1 MiB")
	}
	if err := d.key(f, &m); err != nil {
		return m, err
	}
	return m, d.partition(f.partition, &m)
}

// encoding reads an optional string field; null is absent.
func (d *batchDecoder) encoding(sp span, name string) (string, error) {
	if !sp.present() || d.s.b[sp.start] == 'n' {
		return "", nil
	}
	if d.s.b[sp.start] != '"' {
		return "", errors.New(name + " must be a string")
	}
	switch string(d.s.text(sp)) { // the common spellings, without allocating
	case `""`:
		return "", nil
	case `"base64"`:
		return "base64", nil
	}
	return d.s.unquote(sp)
}

// base64Payload decodes a base64 payload (a JSON string; null reads as empty) into the
// arena.
func (d *batchDecoder) base64Payload(sp span) ([]byte, error) {
	switch d.s.b[sp.start] {
	case 'n':
		return nil, nil
	case '"':
	default:
		return nil, errors.New("payload: a base64 payload must be a JSON string")
	}
	src := d.s.b[sp.start+1 : sp.end-1]
	if !sp.plain {
		v, err := d.s.unquote(sp)
		if err != nil {
			return nil, errors.New("payload: a base64 payload must be a JSON string")
		}
		src = []byte(v)
	}
	need := base64.StdEncoding.DecodedLen(len(src))
	inArena := cap(d.arena)-len(d.arena) >= need // unquoting can make src longer than its span
	var dst []byte
	if inArena {
		dst = d.arena[len(d.arena) : len(d.arena)+need]
	} else {
		dst = make([]byte, need)
	}
	n, err := base64.StdEncoding.Decode(dst, src)
	if err != nil {
		return nil, errors.New("payload: invalid base64")
	}
	if inArena {
		d.arena = d.arena[:len(d.arena)+n]
	}
	return dst[:n:n], nil
}

// key reads key and key_encoding.
func (d *batchDecoder) key(f *batchFields, m *node.ProduceMessage) error {
	keyEnc, err := d.encoding(f.keyEnc, "key_encoding")
	if err != nil {
		return err
	}
	hasKey := f.key.present() && d.s.b[f.key.start] != 'n'
	if !hasKey && keyEnc != "" {
		return errors.New("key_encoding without a key")
	}
	if !hasKey {
		return nil
	}
	if d.s.b[f.key.start] != '"' {
		return errors.New("key must be a string")
	}
	k, err := d.s.unquote(f.key)
	if err != nil {
		return errors.New("key must be a string")
	}
	m.Key, m.HasKey = []byte(k), true
	switch keyEnc {
	case "":
	case "base64":
		if m.Key, err = base64.StdEncoding.DecodeString(k); err != nil {
			return errors.New("key: invalid base64")
		}
	default:
		return errors.New(`key_encoding must be "base64" or absent`)
	}
	if len(m.Key) > keyBytesMax {
		return errKeyTooLong
	}
	return nil
}

// partition reads an optional integer partition; null is absent.
func (d *batchDecoder) partition(sp span, m *node.ProduceMessage) error {
	if !sp.present() || d.s.b[sp.start] == 'n' {
		return nil
	}
	p, err := strconv.ParseInt(string(d.s.text(sp)), 10, 64)
	if err != nil || p < 0 {
		return errors.New("partition must be a non-negative integer")
	}
	m.Partition = p
	return nil
}
