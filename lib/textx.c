/* Small text judgements shared by execd and execd-proxy (textx.h). */
#include "config.h"

#include <string.h>

#include "textx.h"

int
hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
dot_segment(const char *s, size_t n)
{
	size_t	i = 0;
	int	dots = 0;

	while (i < n && dots < 3) {
		if (s[i] == '.')
			i++;
		else if (n - i >= 3 && s[i] == '%' && s[i + 1] == '2' &&
		    (s[i + 2] == 'e' || s[i + 2] == 'E'))
			i += 3;
		else
			return 0;
		dots++;
	}
	return i == n && (dots == 1 || dots == 2) ? dots : 0;
}

int
reason_fits(const char *r, size_t max)
{
	const unsigned char	*p;

	if (strlen(r) > max)
		return 0;
	for (p = (const unsigned char *)r; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}
