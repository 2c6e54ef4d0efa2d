// The umbrella module: `import Sluice` gives an application the whole engine.
@_exported import CodecMJPEG
@_exported import CodecOpenH264
@_exported import CodecOpus
@_exported import CodecVPX
@_exported import CodecX264
@_exported import DeviceV4L2
@_exported import DeviceALSA
@_exported import MediaCodecs
@_exported import MediaConvert
@_exported import MediaCore
@_exported import MediaFiles
@_exported import MediaNegotiation
@_exported import MediaNodes
@_exported import MediaRTP
@_exported import MediaSDP
@_exported import MediaSRTP
@_exported import MediaTransport
