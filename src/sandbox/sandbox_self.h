/* execd's filters on itself (sandbox_self.c). */
#ifndef EXECD_SANDBOX_SELF_H
#define EXECD_SANDBOX_SELF_H

/*
 * What every process of execd's has, commands included, set in main():
 * not dumpable, and unless setuid programs must keep working, no new
 * privileges and a filter refusing calls that nothing run by execd has
 * business making (sandbox_self.c).
 */
int	 sandbox_self_floor(int no_new_privs);
/*
 * An execd instance narrows itself once it has started its spawn helper:
 * no new privileges and an allow-list of the calls it makes (listed and
 * explained in sandbox_self.c).
 */
int	 sandbox_self_narrow(void);

#endif
