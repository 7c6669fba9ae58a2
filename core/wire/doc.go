// Package wire is the format of the messages nodes send each other (DESIGN.md section 4):
// typed, versioned, little endian, every length bounded before anything is allocated. It
// is pure: the node core builds messages, and the shells (io/peernet in production, the
// simulator's network) carry their bytes. How it is driven: Encode a Message to bytes at
// the sender, Decode them at the receiver; Decode never panics, whatever the bytes, and
// accepts exactly what Encode produces (re-encoding a decoded message gives the same
// bytes).
//
// # Format (version 1; a change adds a version, it does not edit this one)
//
//	message   version u8 (1) | kind u8 | body
//
//	kind 1  Raft            raft bytes: a go.etcd.io/raft/v3 raftpb.Message in its
//	                        protobuf wire form, to the length of the message
//	kind 2  Heartbeat       from u64 | addr_len u16 | addr: the member that is alive,
//	                        and where it is reached (at most AddrBytesMax bytes)
//	kind 3  CommitRequest   id u64 | incarnation u64 | partition u32 | topic_len u16 |
//	                        topic | count u32 | count records:
//	                        key_len u32 (0xFFFFFFFF: no key) | payload_len u32 | key | payload
//	kind 4  CommitResponse  id u64 | code u8 | base_offset u64 | count u32
//	kind 5  ProposeRequest  id u64 | command_len u16 | command: a metastore write that
//	                        a follower forwards to the leader (core/meta's encoding)
//	kind 6  ProposeResponse id u64 | code u8 | reason_len u16 | reason
//	kind 7  ConsumeRequest  id u64 | topic_len u16 | topic | partition i64 (-1: any the
//	                        receiver owns) | max u16 | wait_ns i64 | has_offset u8 | offset u64
//	kind 8  ConsumeResponse id u64 | status u8 | reason_len u16 | reason | count u16 |
//	                        count messages: partition u32 | offset u64 | timestamp_ms i64 |
//	                        key_len u32 (0xFFFFFFFF: no key) | key | payload_len u32 |
//	                        payload | handle_len u16 | handle
//	kind 9  AckRequest      id u64 | topic_len u16 | topic | mode u8 | count u16 | count
//	                        handles: handle_len u16 | handle
//	kind 10 AckResponse     id u64 | status u8 | reason_len u16 | reason | count u16 |
//	                        count results u8
//	kind 11 StatsRequest    id u64 | topic_len u16 | topic
//	kind 12 StatsResponse   id u64 | status u8 | count u16 | count partitions: index u32 |
//	                        high_watermark u64 | oldest_offset u64 | size_bytes u64 |
//	                        in_flight u32
//	kind 13 Hello           from u64 | nonce u64: node from's process started
//	kind 14 ConsumeResponse topic_id u64 (not 0) | the body of kind 8: a ConsumeResponse
//	                        naming the topic incarnation its messages were read from
//	                        (added without editing kind 8: a frame without it is kind 8)
//	kind 15 StatsResponse   topic_id u64 (not 0) | the body of kind 12: a StatsResponse
//	                        naming the topic incarnation its partitions belong to at
//	                        the owner (added without editing kind 12)
//	kind 16 ConsumeRequest  actor_len u16 | actor (1-64 bytes) | the body of kind 7: a
//	                        ConsumeRequest made for that user, whose grant the owner
//	                        checks again (kind 7: made for the system, security off)
//	kind 17 AckRequest      actor_len u16 | actor (1-64 bytes) | the body of kind 9
//	kind 18 Forgotten       member u64, removed u8 (0 or 1): the cluster forgot that
//	                        member, or removed it (1): it must stop
//	kind 19 FetchRequest    id u64 | incarnation u64 | partition u32 | epoch u32 |
//	                        from u64 | bytes_max u32 (at most FetchBytesMax)
//	kind 20 FetchResponse   id u64 | code u8 | oldest u64 | high_watermark u64 | next u64 |
//	                        frozen u8 | count u16 | count batches: base u64 |
//	                        commit_ms i64 | the records of kind 3 (count u32 | records) |
//	                        has_acks u8 (only when frozen) | ack_floor u64 | acked u32 |
//	                        acked offsets u64: a moving partition's copy (fetch.go)
//	kind 21 Heartbeat       the body of kind 2 | count u32 | count marks: topic_id u64 |
//	                        partition u32 | epoch u32 | oldest u64 | high_watermark u64:
//	                        a heartbeat with its sender's partition marks (marks.go)
//	kind 22 Raft            raft_len u32 | raft bytes | members u16 | members: member u64 |
//	                        the marks of kind 21: a leader's raft message with its table of
//	                        every member's marks
//	kind 23 ConsumeCancel   id u64: the consume its sender routed under id was answered
//	                        by another owner; one still waiting ends, answered empty
//
// Bounds, checked by Encode and Decode: a message is at most MessageBytesMax (16 MiB,
// the transport's frame limit); a commit carries 1 to CommitRecordsMax records, a topic
// name 1 to TopicBytesMax bytes, a key at most KeyBytesMax, a payload 1 to
// PayloadBytesMax bytes, a forwarded command 1 to CommandBytesMax bytes and a refusal's
// reason at most ReasonBytesMax bytes; a routed consume or ack carries 1 to
// ConsumeMessagesMax messages or handles, a handle at most HandleBytesMax bytes, and the
// messages of one ConsumeResponse at most ConsumeBytesMax bytes (one message always fits);
// a fetch answer carries at most FetchBatchesMax batches and FetchAckedMax acked offsets;
// a heartbeat at most HeartbeatMarksMax marks, a table at most TableMembersMax members
// and TableMarksMax marks, each with oldest at most high_watermark.
package wire
