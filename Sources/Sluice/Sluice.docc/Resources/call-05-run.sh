$ swift run example-call samples/big-buck-bunny-640x360.ivf /tmp/received.ivf 3
connected over host 127.0.0.1:56195 -> host 127.0.0.1:36211
received 76 frames in 316 packets, 0 lost
$ ffprobe -v error -count_frames -show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 /tmp/received.ivf
vp8,640,360,76
