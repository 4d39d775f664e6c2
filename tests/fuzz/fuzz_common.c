/*
 * What the fuzz targets share: the confinement of targets whose code under
 * test opens files, spawns or dials, and turning the event loop by hand.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <net/if.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "fuzz.h"

static void
die(const char *what)
{
	fprintf(stderr, "fuzz sandbox: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
write_file(const char *path, const char *text)
{
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		die(path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

static void
enter_namespaces(void)
{
	const int	flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
	uid_t		uid = getuid();
	gid_t		gid = getgid();
	char		map[64];

	if (unshare(flags) == 0)
		return;
	if (errno != EPERM)
		die("unshare");
	/* not root: become root of a user namespace of our own */
	if (unshare(CLONE_NEWUSER | flags) == -1)
		die("unshare CLONE_NEWUSER");
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %lu 1", (unsigned long)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %lu 1", (unsigned long)gid);
	write_file("/proc/self/gid_map", map);
}

/* The flags a remount must keep (a user namespace may not drop locked ones). */
static unsigned long
kept_flags(const char *mp)
{
	struct statvfs	sv;
	unsigned long	f = 0;

	if (statvfs(mp, &sv) == -1)
		return 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* Mount points from /proc/self/mountinfo, field 5, with \040 escapes undone. */
static size_t
mount_points(char (*out)[PATH_MAX], size_t max)
{
	FILE	*f;
	char	 line[8192], *s, *e;
	size_t	 n = 0, i, j;
	int	 field;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		die("/proc/self/mountinfo");
	while (n < max && fgets(line, sizeof(line), f) != NULL) {
		for (s = line, field = 0; field < 4 && s != NULL; field++)
			if ((s = strchr(s, ' ')) != NULL)
				s++;
		if (s == NULL || (e = strchr(s, ' ')) == NULL)
			continue;
		*e = '\0';
		for (i = j = 0; s[i] != '\0' && j < PATH_MAX - 1; j++) {
			if (s[i] == '\\' && s[i + 1] >= '0' && s[i + 1] <= '3') {
				out[n][j] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
				    (s[i + 3] - '0'));
				i += 4;
			} else
				out[n][j] = s[i++];
		}
		out[n][j] = '\0';
		n++;
	}
	fclose(f);
	return n;
}

static void
remount_readonly(void)
{
	static char	mps[512][PATH_MAX];
	size_t		n, i;

	n = mount_points(mps, 512);
	for (i = 0; i < n; i++) {
		/* may fail on mounts shadowed by later ones: those are unreachable */
		if (mount(NULL, mps[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(mps[i]),
		    NULL) == -1 && errno != ENOENT && errno != EACCES && errno != EINVAL)
			fprintf(stderr, "fuzz sandbox: read-only %s: %s\n", mps[i], strerror(errno));
	}
}

static void
make_dev(void)
{
	int	fd;

	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "size=1m,mode=0755") == -1)
		die("mount tmpfs on /dev");
	if ((fd = open("/dev/null", O_CREAT | O_WRONLY | O_CLOEXEC, 0666)) == -1)
		die("/dev/null");
	close(fd);
	if (mkdir("/dev/pts", 0755) == -1)
		die("/dev/pts");
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "newinstance,ptmxmode=0666,mode=0620") == -1)
		die("mount devpts");
	if (symlink("pts/ptmx", "/dev/ptmx") == -1)
		die("/dev/ptmx");
}

static void
loopback_up(void)
{
	struct ifreq	ifr;
	int		s;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		die("socket");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		die("SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		die("SIOCSIFFLAGS lo");
	close(s);
}

void
fuzz_sandbox(void)
{
	char	cwd[PATH_MAX];

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		die("getcwd");
	/* made on the host file system, once: the mount point of our scratch tmpfs */
	if (mkdir(FUZZ_SCRATCH, 01777) == -1 && errno != EEXIST)
		die(FUZZ_SCRATCH);
	enter_namespaces();
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		die("make / private");
	/* the working directory stays writable: libFuzzer writes units and crashes there */
	if (mount(cwd, cwd, NULL, MS_BIND | MS_REC, NULL) == -1)
		die("bind the working directory");
	remount_readonly();
	if (mount(NULL, cwd, NULL, MS_BIND | MS_REMOUNT | kept_flags(cwd), NULL) == -1)
		die("working directory read-write");
	if (mount("tmpfs", FUZZ_SCRATCH, "tmpfs", MS_NOSUID, "size=64m,mode=1777") == -1)
		die("mount tmpfs on " FUZZ_SCRATCH);
	setenv("TMPDIR", FUZZ_SCRATCH, 1);
	make_dev();
	if (mount("tmpfs", "/sys", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    "size=4k") == -1)
		die("mount tmpfs on /sys");
	/* /proc stays (execd reads /proc/self): hide what is huge or blocks a reader */
	if (mount("/dev/null", "/proc/kcore", NULL, MS_BIND, NULL) == -1 && errno != ENOENT)
		die("hide /proc/kcore");
	if (mount("/dev/null", "/proc/kmsg", NULL, MS_BIND, NULL) == -1 && errno != ENOENT)
		die("hide /proc/kmsg");
	loopback_up();
	if (chdir(cwd) == -1)
		die("chdir");
}

static void
fuzz_break(struct ev_timer *t, void *arg)
{
	ev_break();
}

void
fuzz_pump(unsigned ms)
{
	static struct ev_timer	brk;
	static int		ready;

	if (!ready) {
		ev_timer_init(&brk, fuzz_break, NULL);
		ready = 1;
	}
	ev_timer_start(&brk, ms);
	ev_run();
	ev_timer_stop(&brk);
}

int
fuzz_drain(int fd)
{
	char	sink[65536];
	ssize_t	n;

	while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		;
	return n == 0 ? -1 : 0;
}
