// How busy the rest of the machine was while a scenario ran: the noise a reader must weigh its ratio by.
import Foundation
import Glibc

/// The CPU that was not the run's while a scenario ran, in cores' worth, averaged over its wall time.
/// A ratio measured while `otherProcesses` or `stolen` was well above zero was measured on a busy
/// machine, whatever its rounds' spread says.
public struct MachineLoad: Codable, Sendable, Equatable {
    /// CPU used by other processes of this machine (all CPU time /proc/stat counts as busy, less
    /// this process's and its waited-for children's).
    public var otherProcesses: Double
    /// Time the hypervisor ran something else on this machine's CPUs ("steal" in /proc/stat).
    public var stolen: Double
}

extension MachineLoad {
    /// The load between two readings.
    init(from start: Reading, to end: Reading) {
        let wall = max(end.wall - start.wall, 1e-9)
        let busy = Double(end.ticks.busy - start.ticks.busy) / end.ticksPerSecond
        let own = end.ownCPU - start.ownCPU
        otherProcesses = max(0, busy - own) / wall
        stolen = Double(end.ticks.steal - start.ticks.steal) / end.ticksPerSecond / wall
    }

    /// What the machine's whole-CPU line of /proc/stat counts, in clock ticks.
    struct Ticks: Equatable {
        /// user, nice, system, irq and softirq (guest time is already in user).
        var busy: Int64
        var steal: Int64

        /// The "cpu" line of /proc/stat's `text`: user nice system idle iowait irq softirq steal ...
        init?(procStat text: String) {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
            let fields = line.split(separator: " ").dropFirst().compactMap { Int64($0) }
            guard fields.count >= 8 else { return nil }
            busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
            steal = fields[7]
        }
    }

    /// The machine's ticks, this process's CPU and the clock at one moment.
    struct Reading {
        var ticks: Ticks
        var ownCPU: Double
        var wall: Double
        var ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

        /// Now; nil where /proc/stat cannot be read.
        static func now() -> Reading? {
            guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
                  let ticks = Ticks(procStat: text) else { return nil }
            return Reading(ticks: ticks, ownCPU: ProcessClock.cpuSeconds() + ProcessClock.childrenCPUSeconds(),
                           wall: ProcessClock.now())
        }
    }

    /// Runs `body`, and gives its result with the machine's load meanwhile (nil without /proc/stat).
    static func measure<R>(_ body: () throws -> R) rethrows -> (result: R, load: MachineLoad?) {
        let start = Reading.now()
        let result = try body()
        guard let start, let end = Reading.now() else { return (result, nil) }
        return (result, MachineLoad(from: start, to: end))
    }
}
