/*
 * util/crypto's digests on the command line, for tests/crypto.py to hold
 * against Python's hashlib and hmac: "crypto_digest sha1|sha256" digests
 * stdin, "crypto_digest hmac KEYFILE" MACs it, "crypto_digest equal FILE"
 * compares stdin with FILE.  Prints the digest in hex (or 1 / 0).
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/crypto.h"

static unsigned char *
slurp(int fd, size_t *len)
{
	unsigned char	*p = NULL, *n;
	size_t		 cap = 0;
	ssize_t		 r;

	*len = 0;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 4096;
			if ((n = realloc(p, cap)) == NULL)
				exit(2);
			p = n;
		}
		if ((r = read(fd, p + *len, cap - *len)) < 0)
			exit(2);
		if (r == 0)
			return p;
		*len += (size_t)r;
	}
}

static unsigned char *
slurp_path(const char *path, size_t *len)
{
	unsigned char	*p;
	int		 fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		exit(2);
	p = slurp(fd, len);
	close(fd);
	return p;
}

int
main(int argc, char *argv[])
{
	unsigned char	 md[SHA256_LEN], *in, *other;
	size_t		 len, olen, mdlen, i;
	int		 r;

	if (argc < 2)
		return 2;
	in = slurp(0, &len);
	if (strcmp(argv[1], "sha1") == 0) {
		r = crypto_sha1(in, len, md);
		mdlen = SHA1_LEN;
	} else if (strcmp(argv[1], "sha256") == 0) {
		r = crypto_sha256(in, len, md);
		mdlen = SHA256_LEN;
	} else if (strcmp(argv[1], "hmac") == 0 && argc == 3) {
		other = slurp_path(argv[2], &olen);
		r = crypto_hmac_sha256(other, olen, in, len, md);
		mdlen = SHA256_LEN;
		free(other);
	} else if (strcmp(argv[1], "equal") == 0 && argc == 3) {
		other = slurp_path(argv[2], &olen);
		printf("%d\n", olen == len && crypto_equal(in, other, len));
		free(other);
		free(in);
		return 0;
	} else {
		free(in);
		return 2;
	}
	free(in);
	if (r != 0)
		return 1;
	for (i = 0; i < mdlen; i++)
		printf("%02x", md[i]);
	printf("\n");
	return 0;
}
