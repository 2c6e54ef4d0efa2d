// epoll(7) and eventfd(2), which Swift's Glibc module leaves out: what SocketReactor waits on.
#include <sys/epoll.h>
#include <sys/eventfd.h>
