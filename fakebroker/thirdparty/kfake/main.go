// Command kfake-broker runs franz-go's kfake (a Kafka-compatible broker written in Go by
// others) as one broker on 127.0.0.1, so the coordinator suite can certify it as a
// calibration target (fixtures/targets/kfake.toml). It prints "listening on HOST:PORT" once
// it accepts connections and runs until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	flag.Parse()

	// One broker: FindCoordinator then names the address the suite dialled.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-broker: cannot start on 127.0.0.1:%d: %v\n", *port, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", cluster.ListenAddrs()[0])

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	cluster.Close()
}
