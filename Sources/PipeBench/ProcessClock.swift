// Wall and process CPU time, for throughput and parallelism figures.
import Glibc

/// Readings of the monotonic clock and of the process's CPU time (all threads, user + system).
public enum ProcessClock {
    /// Seconds on the monotonic clock.
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// CPU seconds used by every thread of the process so far (getrusage).
    public static func cpuSeconds() -> Double { cpuSeconds(of: RUSAGE_SELF) }

    /// CPU seconds used by the child processes waited for so far.
    public static func childrenCPUSeconds() -> Double { cpuSeconds(of: RUSAGE_CHILDREN) }

    private static func cpuSeconds(of who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Runs `body` and returns its result with the wall and CPU seconds it took.
    public static func measure<R>(_ body: () throws -> R) rethrows -> (result: R, wall: Double, cpu: Double) {
        let (wall0, cpu0) = (now(), cpuSeconds())
        let result = try body()
        return (result, now() - wall0, cpuSeconds() - cpu0)
    }
}
