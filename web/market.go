package web

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"marketd/store"
	"marketd/store/admin"
)

// The landing page's windows: sales by the hour over a day, the rest by the minute over an hour.
const (
	salesHours    = 24
	recentMinutes = 60
)

// marketModel is the landing page: the market at a glance, one store read per figure.
type marketModel struct {
	Page         pageModel
	Now          time.Time
	Sales        *admin.SalesChart
	Fills        *admin.CountChart
	SignIns      *admin.CountChart
	Refusals     *admin.ScopedChart
	OpenSessions int64
}

// marketPage shows the market at a glance: sales per hour, swap fills, sign-ins and 429
// refusals per minute, and the sessions open now, each from one store read.
func (c *Console) marketPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	ctx := r.Context()
	v := marketModel{Page: c.page(r, u, "Market at a glance"), Now: c.store.Now()}
	var err error
	if v.Sales, err = c.admin.SalesPerHour(ctx, salesHours); err == nil {
		if v.Fills, err = c.admin.SwapFillsPerMinute(ctx, recentMinutes); err == nil {
			if v.SignIns, err = c.admin.SignInsPerMinute(ctx, recentMinutes); err == nil {
				if v.Refusals, err = c.admin.RefusalsPerMinute(ctx, recentMinutes); err == nil {
					v.OpenSessions, err = c.admin.OpenSessions(ctx)
				}
			}
		}
	}
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, marketView(v))
}

// bucketLabels names each bucket by its start, UTC: "14:05".
func bucketLabels(b admin.TimeBuckets) []string {
	ls := make([]string, b.N)
	for i := range ls {
		ls[i] = b.At(i).UTC().Format("15:04")
	}
	return ls
}

func floats(xs []int64) []float64 {
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	return fs
}

func total(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// whole formats a count; an axis tick between whole numbers (a chart of small counts) keeps
// one decimal.
func whole(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// volume formats an amount for a chart: two decimals, or none from a thousand up.
func volume(v float64) string {
	if v >= 1000 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// timeAxis is a chart over b whose x axis labels every bucket that starts a whole multiple
// of every buckets (10 minutes, 3 hours), so the labels fall on round times.
func timeAxis(id, title, unit string, b admin.TimeBuckets, every int) chart {
	period := int64(every) * b.Width.Microseconds()
	late := b.Start.UnixMicro() % period
	first := int((period - late) % period / b.Width.Microseconds())
	return chart{ID: id, Title: title, Unit: unit, Labels: bucketLabels(b), Ticks: every, First: first, Counts: true, Format: whole}
}

func countChart(id, title, unit string, b admin.TimeBuckets, every int, counts []int64) chart {
	c := timeAxis(id, title, unit, b, every)
	c.Series = []chartSeries{{Name: unit, Values: floats(counts)}}
	return c
}

func (m marketModel) salesCountChart() chart {
	return countChart("sales-count", "NFT sales per hour, last 24 hours (UTC)", "sales", m.Sales.TimeBuckets, 3, m.Sales.Count)
}

func (m marketModel) salesVolumeChart() chart {
	c := timeAxis("sales-volume", "Sales volume per hour, by currency", "", m.Sales.TimeBuckets, 3)
	c.Line, c.Counts, c.Format = true, false, volume
	for _, inst := range store.Instruments {
		c.Series = append(c.Series, chartSeries{Name: string(inst), Values: m.Sales.Volume[inst]})
	}
	return c
}

func (m marketModel) fillsChart() chart {
	return countChart("swap-fills", "Swap fills per minute, last hour (UTC)", "fills", m.Fills.TimeBuckets, 10, m.Fills.Count)
}

func (m marketModel) signInsChart() chart {
	return countChart("sign-ins", "Wallet sign-ins per minute, last hour (UTC)", "sign-ins", m.SignIns.TimeBuckets, 10, m.SignIns.Count)
}

// refusalsChart stacks each scope's refusals per minute, scopes in name order.
func (m marketModel) refusalsChart() chart {
	c := timeAxis("refusals", "429 refusals per minute by scope, last hour (UTC)", "refusals", m.Refusals.TimeBuckets, 5)
	c.Wide = true
	scopes := make([]string, 0, len(m.Refusals.Count))
	for s := range m.Refusals.Count {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	for _, s := range scopes {
		c.Series = append(c.Series, chartSeries{Name: s, Values: floats(m.Refusals.Count[s])})
	}
	if len(c.Series) == 0 {
		c.Series = []chartSeries{{Name: "refusals", Values: make([]float64, m.Refusals.N)}}
	}
	return c
}

func (m marketModel) refusalTotal() (n int64) {
	for _, xs := range m.Refusals.Count {
		n += total(xs)
	}
	return n
}
