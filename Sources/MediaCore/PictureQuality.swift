import Glibc

/// Objective picture comparison, used by tests, the CLI and benchmarks.
public enum PictureQuality {
    /// Sum of squared differences and sample count over all planes of two pictures of equal format.
    public static func squaredError(_ a: VideoFrame, _ b: VideoFrame) -> (sum: UInt64, samples: Int) {
        precondition(a.width == b.width && a.height == b.height && a.pixelFormat == b.pixelFormat,
                     "comparing pictures of different formats")
        var sum: UInt64 = 0
        var samples = 0
        for plane in 0..<a.layout.planeCount {
            for row in 0..<a.layout[plane].rows {
                let ra = a.row(row, ofPlane: plane), rb = b.row(row, ofPlane: plane)
                var rowSum: UInt64 = 0
                for i in 0..<ra.count {
                    let d = Int(ra[i]) - Int(rb[i])
                    rowSum &+= UInt64(d * d)
                }
                sum &+= rowSum
                samples += ra.count
            }
        }
        return (sum, samples)
    }

    /// Peak signal-to-noise ratio in dB for 8-bit samples, from a mean squared error.
    /// Identical pictures give `.infinity`.
    public static func psnr(meanSquaredError mse: Double) -> Double {
        mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// PSNR of `b` against reference `a` over all planes.
    public static func psnr(_ a: VideoFrame, _ b: VideoFrame) -> Double {
        let (sum, samples) = squaredError(a, b)
        return psnr(meanSquaredError: Double(sum) / Double(samples))
    }
}
