$ swift run example-transcode samples/big-buck-bunny-640x360.ivf /tmp/bunny.webm
samples/big-buck-bunny-640x360.ivf -> /tmp/bunny.webm: video/VP8 640x360@25 -> video/VP8 640x360@25
132 frames, 163 frames/s, 965 kbit/s
$ ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 /tmp/bunny.webm
132
$ swift run example-transcode missing.mp4 out.webm
example-transcode: missing.mp4: cannot open: No such file or directory
