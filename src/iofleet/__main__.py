from iofleet.cli.main import app

app(prog_name="iofleet")
