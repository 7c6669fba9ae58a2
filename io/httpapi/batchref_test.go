package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"

	"github.com/narad/narad/core/node"
)

// The batch body decoder that decodeBatchBody replaced: encoding/json into structs. It
// stays as the reference the new decoder is held to (batchdecode_test.go).

// batchRequest is the body of POST /v1/topics/{topic}/produce/batch.
type batchRequest struct {
	Messages []batchMessage `json:"messages"`
}

type batchMessage struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Key             *string         `json:"key"`
	KeyEncoding     string          `json:"key_encoding"`
	Partition       *int64          `json:"partition"`
}

// decode validates one message of a batch and turns it into a ProduceMessage.
func (bm *batchMessage) decode() (node.ProduceMessage, error) {
	m := node.ProduceMessage{Partition: -1, Payload: bm.Payload}
	if len(bm.Payload) == 0 {
		return m, errors.New("payload is required")
	}
	switch bm.PayloadEncoding {
	case "":
	case "base64":
		p, err := decodeBase64String(bm.Payload)
		if err != nil {
			return m, errors.New("payload: " + err.Error())
		}
		m.Payload = p
	default:
		return m, errors.New(`payload_encoding must be "base64" or absent`)
	}
	if len(m.Payload) == 0 || len(m.Payload) > payloadBytesMax {
		return m, errors.New("payload must be 1 byte to 1 MiB")
	}
	if bm.Key == nil && bm.KeyEncoding != "" {
		return m, errors.New("key_encoding without a key")
	}
	if bm.Key != nil {
		m.Key, m.HasKey = []byte(*bm.Key), true
		switch bm.KeyEncoding {
		case "":
		case "base64":
			k, err := base64.StdEncoding.DecodeString(*bm.Key)
			if err != nil {
				return m, errors.New("key: invalid base64")
			}
			m.Key = k
		default:
			return m, errors.New(`key_encoding must be "base64" or absent`)
		}
		if len(m.Key) > keyBytesMax {
			return m, errKeyTooLong
		}
	}
	if bm.Partition != nil {
		if *bm.Partition < 0 {
			return m, errors.New("partition must be a non-negative integer")
		}
		m.Partition = *bm.Partition
	}
	return m, nil
}

// decodeBase64String decodes raw, a JSON string of standard padded base64.
func decodeBase64String(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("a base64 payload must be a JSON string")
	}
	p, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("invalid base64")
	}
	return p, nil
}

// refDecodeBatch decodes a batch body the way produceBatch did before decodeBatchBody.
func refDecodeBatch(body []byte) ([]node.ProduceMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req batchRequest
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	if len(req.Messages) == 0 || len(req.Messages) > produceBatchMax {
		return nil, errors.New("messages: count")
	}
	msgs := make([]node.ProduceMessage, len(req.Messages))
	for i := range req.Messages {
		m, err := req.Messages[i].decode()
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}
