"""gradcli's command line: click commands only. Heavy imports happen inside each command."""
import click

from gradcli import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradcli")
def main():
    """Check hand-written autograd backward passes and compute derivatives.

    \b
      gradcli check myop.py          check every autograd Function in a file
      gradcli diff "sqrt(x)+1/x" --at x=3   symbolic derivative, cross-checked
    """


if __name__ == "__main__":
    main()
