package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/narad/narad/client"
)

// Produce a message and consume it with a lease, then acknowledge it.
func Example() {
	ctx := context.Background()
	c, err := client.New([]string{nodeAddr}) // "host:port", several for a cluster
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateTopic(ctx, client.TopicConfig{Name: "example", Partitions: client.Ptr[uint32](1)}); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.DeleteTopic(context.Background(), "example") }() // the example can run again
	if err := c.Produce(ctx, "example", []byte("hello")); err != nil {
		log.Fatal(err)
	}
	msgs, err := c.Consume(ctx, "example", client.ConsumeOptions{Max: 10, Wait: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("partition %d offset %d: %s\n", m.Partition, m.Offset, m.Payload)
		if err := c.Ack(ctx, "example", m.ReceiptHandle); err != nil {
			log.Fatal(err)
		}
	}
	// Output: partition 0 offset 0: hello
}

// A Consumer hands every message to a function: nil acks it, an error nacks it (it comes
// back at once). It stops when its context ends.
func ExampleConsumer() {
	ctx := context.Background()
	c, err := client.New([]string{nodeAddr})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, client.TopicConfig{Name: "jobs", Partitions: client.Ptr[uint32](1)}); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.DeleteTopic(context.Background(), "jobs") }() // the example can run again
	batch := []client.BatchMessage{{Payload: []byte("job 1")}, {Payload: []byte("job 2")}, {Payload: []byte("job 3")}}
	if _, err := c.ProduceBatch(ctx, "jobs", batch); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done, failedOnce := 0, false
	consumer := &client.Consumer{Client: c, Topic: "jobs", Max: 10, Wait: time.Second,
		Handler: func(ctx context.Context, m client.Message) error {
			if string(m.Payload) == "job 2" && !failedOnce {
				failedOnce = true
				return errors.New("not now") // nacked: delivered again
			}
			fmt.Printf("%s\n", m.Payload)
			if done++; done == len(batch) {
				cancel()
			}
			return nil
		}}
	if err := consumer.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// job 1
	// job 3
	// job 2
}

// Errors carry the HTTP status and the server's message, and match sentinels.
func ExampleError() {
	c, err := client.New([]string{nodeAddr})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.GetTopic(context.Background(), "no-such-topic")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, errors.Is(err, client.ErrNotFound))
	}
	// Output: 404 true
}

// Several nodes of a cluster, credentials from the environment, and a produce that may
// be retried at the cost of a possible duplicate.
func ExampleNew() {
	c, err := client.New([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"},
		client.WithBasicAuth(os.Getenv("NARAD_USER"), os.Getenv("NARAD_PASSWORD")),
		client.WithAttempts(6))
	if err != nil {
		log.Fatal(err)
	}
	err = c.Produce(context.Background(), "orders", []byte(`{"id":1}`), client.WithKey("customer-7"),
		client.RetryMayDuplicate())
	if errors.Is(err, client.ErrForbidden) {
		log.Print("no produce grant on orders")
	}
}
