#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rpc/errno_text.h"

const char *
errno_text(int errnum, char *buf, size_t len)
{
	const char	*s;

	/* The reference is built on musl: use its wording where glibc's differs. */
	switch (errnum) {
	case ELOOP:
		s = "Symbolic link loop";
		break;
	case ENAMETOOLONG:
		s = "Filename too long";
		break;
	case ETXTBSY:
		s = "Text file busy";
		break;
	case ENOTSUP:
		s = "Not supported";
		break;
	case EBUSY:
		s = "Resource busy";
		break;
	case EIO:
		s = "I/O error";
		break;
	case ENOMEM:
		s = "Out of memory";
		break;
	case EXDEV:
		s = "Cross-device link";
		break;
	case EDQUOT:
		s = "Quota exceeded";
		break;
	case EOVERFLOW:
		s = "Value too large for data type";
		break;
	default:
		s = strerror(errnum);
		break;
	}
	snprintf(buf, len, "%s (os error %d)", s, errnum);
	return buf;
}
