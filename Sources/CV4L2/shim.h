// libv4l2 and the V4L2 UAPI (linux/videodev2.h). Swift reaches neither variadic functions
// (v4l2_open, v4l2_ioctl) nor the _IOR/_IOWR request macros, so each gets a static inline shim.
#ifndef SLUICE_CV4L2_SHIM_H
#define SLUICE_CV4L2_SHIM_H

#include <fcntl.h>
#include <sys/mman.h>
#include <linux/videodev2.h>
#include <libv4l2.h>

#include <sys/ioctl.h>

// The kernel's ioctl without libv4l2, to ask VIDIOC_QUERYCAP before handing a descriptor to
// libv4l2 (v4l2_fd_open), which prints to stderr about nodes that are no V4L2 devices.
static inline int sluice_ioctl(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }
static inline int sluice_v4l2_ioctl(int fd, unsigned long request, void *argument) {
    return v4l2_ioctl(fd, request, argument);
}

static inline unsigned long sluice_VIDIOC_QUERYCAP(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long sluice_VIDIOC_ENUM_FMT(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long sluice_VIDIOC_ENUM_FRAMESIZES(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long sluice_VIDIOC_ENUM_FRAMEINTERVALS(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
static inline unsigned long sluice_VIDIOC_S_FMT(void) { return VIDIOC_S_FMT; }
static inline unsigned long sluice_VIDIOC_G_PARM(void) { return VIDIOC_G_PARM; }
static inline unsigned long sluice_VIDIOC_S_PARM(void) { return VIDIOC_S_PARM; }
static inline unsigned long sluice_VIDIOC_REQBUFS(void) { return VIDIOC_REQBUFS; }
static inline unsigned long sluice_VIDIOC_QUERYBUF(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long sluice_VIDIOC_QBUF(void) { return VIDIOC_QBUF; }
static inline unsigned long sluice_VIDIOC_DQBUF(void) { return VIDIOC_DQBUF; }
static inline unsigned long sluice_VIDIOC_STREAMON(void) { return VIDIOC_STREAMON; }
static inline unsigned long sluice_VIDIOC_STREAMOFF(void) { return VIDIOC_STREAMOFF; }

#endif
