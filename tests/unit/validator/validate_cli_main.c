/* validate-cli: `general-agent validate` as its own program (tests, tuning). */
#include "modules/validator/echo.h"
#include "modules/validator/validator_cli.h"

int main(int argc, char **argv)
{
	argv[0] = "validate";
	int rc = validator_cli_main(argc, argv);
	echo_shutdown();
	return rc;
}
