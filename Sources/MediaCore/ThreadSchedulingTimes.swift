import Glibc

/// What the kernel's scheduler knows of one thread, readable from any thread: how long it has been
/// on a CPU and how long it waited on a run queue for one (`/proc/thread-self/schedstat`: nanoseconds
/// on a CPU, nanoseconds runnable but waiting, timeslices; Linux's
/// Documentation/scheduler/sched-stats.rst), and whether it is runnable now (the state in
/// `/proc/thread-self/stat`, proc(5)). Over a span, a thread that neither ran nor waited to run was
/// asleep: blocked in a system call or on a lock. One that waited was only preempted, by other
/// threads or processes wanting the same cores.
///
/// The kernel adds to both times when the thread is switched in or out, so a running or waiting
/// thread's figures lag by its current turn; a sleeping thread's are exact.
/// Where the files cannot be read, the thread's CPU clock stands in, with no waiting time, and the
/// thread counts as asleep.
final class ThreadSchedulingTimes: @unchecked Sendable {
    /// Times since the thread started.
    struct Reading: Equatable {
        var onCPU: ClockTime
        var waiting: ClockTime
    }

    private let schedstat: Int32
    private let stat: Int32
    private var cpuClock = clockid_t()

    /// The times of the calling thread.
    init() {
        schedstat = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)
        stat = open("/proc/thread-self/stat", O_RDONLY | O_CLOEXEC)
        pthread_getcpuclockid(pthread_self(), &cpuClock)
    }

    deinit {
        if schedstat >= 0 { close(schedstat) }
        if stat >= 0 { close(stat) }
    }

    /// The thread's times now. A `pread` makes the kernel write the figures afresh.
    func read() -> Reading {
        let reading = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { bytes in
            Self.read(schedstat, into: bytes).flatMap(Self.parseSchedstat)
        }
        if let reading { return reading }
        var spec = timespec()
        clock_gettime(cpuClock, &spec)
        return Reading(onCPU: ClockTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)),
                       waiting: .zero)
    }

    /// Whether the thread is on a CPU or waiting for one now (state R).
    var isRunnable: Bool {
        withUnsafeTemporaryAllocation(byteCount: 512, alignment: 8) { bytes in
            Self.read(stat, into: bytes).flatMap(Self.parseState) == UInt8(ascii: "R")
        }
    }

    private static func read(_ descriptor: Int32, into bytes: UnsafeMutableRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard descriptor >= 0 else { return nil }
        let count = pread(descriptor, bytes.baseAddress, bytes.count, 0)
        return count > 0 ? UnsafeRawBufferPointer(rebasing: bytes[0..<count]) : nil
    }

    /// The first two numbers of a schedstat line ("123 456 7\n"); nil when they are not there.
    static func parseSchedstat(_ text: UnsafeRawBufferPointer) -> Reading? {
        var first = Int64(0)
        var field = 0, digits = 0, value = Int64(0)
        for byte in text {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                guard digits < 18 else { return nil }  // beyond 31 years
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                digits += 1
            } else if (byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n")) && digits > 0 {
                if field == 1 { return Reading(onCPU: ClockTime(nanoseconds: first), waiting: ClockTime(nanoseconds: value)) }
                (first, field, digits, value) = (value, 1, 0, 0)
            } else {
                return nil
            }
        }
        return nil
    }

    /// The state letter of a stat line ("41 (name) R 1 ..."): the first after the last ')', as the
    /// name itself may hold parentheses and spaces.
    static func parseState(_ text: UnsafeRawBufferPointer) -> UInt8? {
        guard let close = text.lastIndex(of: UInt8(ascii: ")")), close + 2 < text.count,
              text[close + 1] == UInt8(ascii: " ") else { return nil }
        return text[close + 2]
    }
}
