/*
 * The cache of login-shell snapshots, keyed by what the client's request
 * says of the shell's start (scope, cwd, envPolicy, sandbox, shell), and
 * bounded in count and size.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_int.h"

static struct snapshot	*cache;
static size_t		 ncache;

static void
snapshot_free(struct snapshot *s)
{
	free(s->key);
	free(s->script);
	json_decref(s->env);
	free(s);
}

static void
unlink_entry(struct snapshot *s)
{
	struct snapshot	**pp;

	for (pp = &cache; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			ncache--;
			return;
		}
}

struct snapshot *
snapshot_find(const char *key, uint64_t now)
{
	struct snapshot	*s;

	for (s = cache; s != NULL; s = s->next)
		if (strcmp(s->key, key) == 0)
			break;
	if (s == NULL)
		return NULL;
	if (s->state == SNAPSHOT_FAILED && now - s->stamp >= SNAPSHOT_RETRY_MS) {
		unlink_entry(s);
		snapshot_free(s);
		return NULL;
	}
	if (s->state == SNAPSHOT_READY)
		s->stamp = now;
	return s;
}

/* Make room: the least recently used entry that is not being captured goes. */
static int
evict_one(void)
{
	struct snapshot	*s, *old = NULL;

	for (s = cache; s != NULL; s = s->next)
		if (s->state != SNAPSHOT_CAPTURING && (old == NULL || s->stamp < old->stamp))
			old = s;
	if (old == NULL)
		return -1;
	unlink_entry(old);
	snapshot_free(old);
	return 0;
}

struct snapshot *
snapshot_begin(const char *key, uint64_t now)
{
	struct snapshot	*s;

	while (ncache >= SNAPSHOT_MAX_ENTRIES)
		if (evict_one() == -1) {
			log_warnx("shell snapshot: %zu captures at once, none more", ncache);
			return NULL;
		}
	if ((s = calloc(1, sizeof(*s))) == NULL || (s->key = strdup(key)) == NULL) {
		log_warn("shell snapshot");
		free(s);
		return NULL;
	}
	s->state = SNAPSHOT_CAPTURING;
	s->stamp = now;
	s->next = cache;
	cache = s;
	ncache++;
	return s;
}

enum snapshot_state
snapshot_state(const struct snapshot *s)
{
	return s->state;
}

int
snapshot_done(const char *key, const char *out, size_t len, uint64_t now)
{
	struct snapshot	*s;

	for (s = cache; s != NULL; s = s->next)
		if (s->state == SNAPSHOT_CAPTURING && strcmp(s->key, key) == 0)
			break;
	if (s == NULL)
		return -1;
	s->stamp = now;
	if (out == NULL || snapshot_parse(s, out, len) == -1) {
		s->state = SNAPSHOT_FAILED;
		return -1;
	}
	s->state = SNAPSHOT_READY;
	return 0;
}

int
snapshot_fd(const struct snapshot *s, const char *name)
{
	static const char	close15[] = "\\exec 15<&-\n";
	/* zsh reads one digit of a descriptor: 15 goes through a variable, as in the reference */
	static const char	zclose15[] = "__codex_snapshot_fd=15\n"
	    "exec {__codex_snapshot_fd}<&-\nunset __codex_snapshot_fd\n";
	const char		*close_line = strcmp(name, "zsh") == 0 ? zclose15 : close15;
	size_t			off = 0;
	ssize_t			n;
	int			fd;

	if ((fd = memfd_create("execd-shell-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING)) == -1) {
		log_warn("shell snapshot: memfd_create");
		return -1;
	}
	if (write(fd, close_line, strlen(close_line)) != (ssize_t)strlen(close_line))
		goto fail;
	while (off < s->script_len) {
		if ((n = write(fd, s->script + off, s->script_len - off)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += (size_t)n;
	}
	/* sealed: not even a reopening through /proc can write it */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) == -1 ||
	    lseek(fd, 0, SEEK_SET) == -1)
		goto fail;
	return fd;
fail:
	log_warn("shell snapshot: memfd");
	close(fd);
	return -1;
}

void
snapshot_clear(void)
{
	struct snapshot	*s;

	while ((s = cache) != NULL) {
		cache = s->next;
		snapshot_free(s);
	}
	ncache = 0;
}

size_t
snapshot_count(void)
{
	return ncache;
}
