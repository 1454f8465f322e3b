/*
 * One JVM that runs many Apache Kafka Connect distributed workers, one after another or side by
 * side, each started exactly as ConnectDistributed starts its own (startConnect with the worker's
 * properties) and stopped as its shutdown hook stops it (Connect.stop). A certification starts a
 * worker per case; in a warm JVM a worker starts on ~0.2 s of CPU instead of ~1.3 s.
 *
 * Usage: java -cp <connect libs>/*:<this class's jar> WorkerHost SOCKET
 * Prints "READY SOCKET" once it listens on the Unix socket SOCKET, creates SOCKET.ran once a
 * worker started (a class-data archive of this JVM then holds a worker's classes), and runs
 * until killed (its owner starts it in a process group of its own, killed with the owner:
 * fakebroker.realkafka.jvm).
 *
 * One connection is one worker (line protocol, UTF-8):
 *   client: START <properties file> <log file>    host: STARTED | FAILED <reason>
 *   client: STOP                                   host: STOPPED
 *                                                  host: EXITED <code> (the worker called Exit.exit)
 * The connection closing before STOP stops the worker too, as SIGTERM stops a worker's own JVM.
 * A worker's log lines (every thread it starts inherits its log4j ThreadContext) go to its log
 * file; a worker that calls Kafka's Exit.exit (its herder does on a fatal error) is stopped and
 * its code sent to its client, where its own JVM would have exited: the host lives on.
 */

import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.routing.RoutingAppender;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

public final class WorkerHost {
    static final String LOG_KEY = "workerLog";  // the routing key of log4j2-host.xml
    static final String ID_KEY = "hostedWorker";
    private static final Logger LOG = LogManager.getLogger(WorkerHost.class);
    private static final AtomicInteger IDS = new AtomicInteger();
    // hosted worker id -> its worker, for Exit.exit from any of its threads
    private static final Map<String, Hosted> WORKERS = new ConcurrentHashMap<>();
    private static Path ranMarker;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: WorkerHost SOCKET");
            System.exit(2);
        }
        Path socket = Path.of(args[0]);
        ranMarker = Path.of(args[0] + ".ran");
        Files.deleteIfExists(ranMarker);
        Exit.setExitProcedure(WorkerHost::workerExit);
        Exit.setHaltProcedure(WorkerHost::workerExit);
        Files.deleteIfExists(socket);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        System.out.println("READY " + socket);
        System.out.flush();
        while (true) {
            SocketChannel channel = server.accept();
            Thread t = new Thread(() -> serve(channel), "host-connection-" + IDS.incrementAndGet());
            t.setDaemon(true);
            t.start();
        }
    }

    /** Kafka's Exit.exit / Exit.halt: a worker's thread asks its process to end. */
    private static void workerExit(int code, String message) {
        String id = ThreadContext.get(ID_KEY);
        if (id == null) {
            Runtime.getRuntime().halt(code);  // the host's own threads: as the JVM would
            return;
        }
        Hosted w = WORKERS.get(id);
        if (w == null) {  // a thread of a worker already stopped: nothing left to end
            LOG.warn("a stopped worker's thread called Exit.exit({}): ignored", code);
            return;
        }
        LOG.error("the worker called Exit.exit({}){}: stopping it (its own JVM would have exited)",
                  code, message == null ? "" : " (" + message + ")");
        w.exitCode = code;
        Thread stopper = new Thread(() -> {  // not on the caller: it may be the herder, which stop joins
            w.stop();
            w.send("EXITED " + code);
        }, "exit-" + id);
        stopper.start();
    }

    private static void serve(SocketChannel channel) {
        Hosted w = null;
        try (channel) {
            LineReader in = new LineReader(channel);
            String line = in.readLine();
            if (line == null) {
                return;  // a probe: is the host listening?
            }
            String[] parts = line.split(" ", 3);
            if (parts.length != 3 || !parts[0].equals("START")) {
                new Hosted("?", "", channel).send("FAILED expected: START <properties file> <log file>");
                return;
            }
            w = new Hosted("w" + IDS.incrementAndGet(), parts[2], channel);
            // This thread stops the worker: its lines of that go to the worker's log too.
            ThreadContext.put(ID_KEY, w.id);
            ThreadContext.put(LOG_KEY, w.logFile);
            String failure = w.start(Path.of(parts[1]));
            w.send(failure == null ? "STARTED" : "FAILED " + failure);
            if (failure != null) {
                return;
            }
            if (!Files.exists(ranMarker)) {
                Files.writeString(ranMarker, "");
            }
            while ((line = in.readLine()) != null && !line.equals("STOP")) {
                // only STOP is expected
            }
            w.stop();
            if (line != null) {
                w.send("STOPPED");
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("connection of hosted worker {}: {}", w == null ? "?" : w.id, e.toString());
        } finally {
            if (w != null) {
                w.stop();
            }
            ThreadContext.clearMap();
        }
    }

    /** Lines read straight off the channel: a stream over it (Channels.newInputStream) would
     *  hold the channel's lock while it waits, and no EXITED could be written meanwhile. */
    private static final class LineReader {
        private final SocketChannel channel;
        private final ByteBuffer buffer = ByteBuffer.allocate(8192);
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        LineReader(SocketChannel channel) {
            this.channel = channel;
            buffer.flip();
        }

        /** The next line without its newline; null at the end of the stream. */
        String readLine() throws IOException {
            line.reset();
            while (true) {
                while (buffer.hasRemaining()) {
                    byte b = buffer.get();
                    if (b == '\n') {
                        return line.toString(StandardCharsets.UTF_8);
                    }
                    line.write(b);
                }
                buffer.clear();
                int n = channel.read(buffer);
                buffer.flip();
                if (n < 0) {
                    return null;
                }
            }
        }
    }

    /** One worker: its Connect, the log file its threads' lines go to. */
    private static final class Hosted {
        final String id;
        final String logFile;
        private final SocketChannel client;
        volatile Connect connect;
        volatile Integer exitCode;
        private boolean stopped;

        Hosted(String id, String logFile, SocketChannel client) {
            this.id = id;
            this.logFile = logFile;
            this.client = client;
        }

        /** One line to the client; a client already gone has nothing to be told. */
        void send(String line) {
            ByteBuffer bytes = ByteBuffer.wrap((line.replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8));
            try {
                synchronized (client) {
                    while (bytes.hasRemaining()) {
                        client.write(bytes);
                    }
                }
            } catch (IOException e) {
                LOG.debug("hosted worker {}: client gone ({})", id, e.toString());
            }
        }

        /** Starts the worker on a thread of its own (every thread the worker starts inherits
         *  its ThreadContext, so its log lines and Exit calls are known as its); null or why not. */
        String start(Path properties) {
            WORKERS.put(id, this);
            String[] failure = {null};
            Thread starter = new Thread(() -> {
                ThreadContext.put(ID_KEY, id);
                ThreadContext.put(LOG_KEY, logFile);
                try {
                    Map<String, String> props = Utils.propsToStringMap(Utils.loadProps(properties.toString()));
                    connect = new ConnectDistributed().startConnect(props);
                } catch (Throwable t) {
                    LOG.error("Stopping due to error", t);  // ConnectDistributed's own words, then exit 2
                    failure[0] = t.toString();
                }
            }, "start-" + id);
            starter.start();
            try {
                starter.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "interrupted while starting";
            }
            if (failure[0] == null && exitCode != null) {
                failure[0] = "the worker exited with " + exitCode + " while starting";
            }
            return failure[0];
        }

        synchronized void stop() {
            if (stopped) {
                return;
            }
            stopped = true;
            try {
                if (connect != null) {
                    connect.stop();
                    forgetShutdownHook(connect);
                }
            } finally {
                WORKERS.remove(id);
                closeLog(logFile);
            }
        }
    }

    /** A stopped Connect's shutdown hook would keep the whole worker reachable until the host exits. */
    private static void forgetShutdownHook(Connect connect) {
        try {
            Field hook = Connect.class.getDeclaredField("shutdownHook");
            hook.setAccessible(true);
            Runtime.getRuntime().removeShutdownHook((Thread) hook.get(connect));
        } catch (ReflectiveOperationException | IllegalStateException e) {
            LOG.warn("cannot remove a stopped worker's shutdown hook: {}", e.toString());
        }
    }

    private static void closeLog(String logFile) {
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        RoutingAppender routing = context.getConfiguration().getAppender("workers");
        if (routing != null) {
            routing.deleteAppender(logFile);
        }
    }
}
